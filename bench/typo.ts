/**
 * Typo suggestions (issue 14): mailverdict's typo checker against mailcheck and
 * @zootools/email-spell-checker, each with its own default domains, on one seeded corpus
 * (bench/typo-corpus.ts); then the disposable list's coverage of the maintained peer lists.
 * Run alone with `npx tsx bench/typo.ts`; `npm run bench` prints both tables.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import spellChecker from '@zootools/email-spell-checker';
import { parseAddress } from '../src/address/parse.js';
import { DomainSet } from '../src/checks/domain-set.js';
import { PackedDomainSet } from '../src/checks/packed-domain-set.js';
import { createTypoSuggester } from '../src/checks/typo.js';
import { DISPOSABLE_COUNT, DISPOSABLE_PACKED } from '../src/data/generated/disposable.js';
import { generateTypoCorpus, type TypoCase } from './typo-corpus.js';

const require = createRequire(import.meta.url);

interface Mailcheck {
  run(options: { email: string }): { domain: string } | undefined;
}

type Suggest = (email: string) => string | null | undefined;

export interface TypoRow {
  readonly name: string;
  readonly precision: number;
  readonly recall: number;
  readonly suggestions: number;
  readonly wrong: number;
  readonly nsNegative: number;
  readonly nsPositive: number;
}

const ROUNDS = 5;

/** Best of ROUNDS passes over `emails`, in nanoseconds per address. */
function nsPerAddress(suggest: Suggest, emails: readonly string[]): number {
  let best = Infinity;
  let sink = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    const started = process.hrtime.bigint();
    for (const email of emails) if (suggest(email)) sink++;
    const ns = Number(process.hrtime.bigint() - started) / emails.length;
    // Round 0 warms the JIT up.
    if (round > 0) best = Math.min(best, ns);
  }
  if (sink < 0) console.log(sink);
  return best;
}

function score(name: string, suggest: Suggest, cases: readonly TypoCase[]): TypoRow {
  let suggestions = 0;
  let correct = 0;
  let positives = 0;
  for (const { domain, meant } of cases) {
    const suggestion = suggest(`ann@${domain}`) ?? null;
    if (meant !== null) positives++;
    if (suggestion === null) continue;
    suggestions++;
    if (suggestion === meant) correct++;
  }
  // Speed on every typo and on every 7th real domain (about 21,000): the peers take 10-30 µs
  // an address, and the whole list would make this table take minutes.
  const negatives = cases
    .filter((c, i) => c.meant === null && i % 7 === 0)
    .map((c) => `ann@${c.domain}`);
  const typos = cases.filter((c) => c.meant !== null).map((c) => `ann@${c.domain}`);
  return {
    name,
    precision: suggestions === 0 ? 1 : correct / suggestions,
    recall: correct / positives,
    suggestions,
    wrong: suggestions - correct,
    nsNegative: nsPerAddress(suggest, negatives),
    nsPositive: nsPerAddress(suggest, typos),
  };
}

export function typoBench(): { rows: TypoRow[]; corpus: ReturnType<typeof generateTypoCorpus> } {
  const corpus = generateTypoCorpus();
  const ours = createTypoSuggester();
  const mailcheck = require('mailcheck') as Mailcheck;
  const suggesters: Array<[string, Suggest]> = [
    // The domain is what the engine hands the checker (the parse is not timed for anyone
    // else either: the peers split the address themselves).
    ['mailverdict typo', (email) => ours(email.slice(email.lastIndexOf('@') + 1))],
    ['mailcheck 1.1.1 (run)', (email) => mailcheck.run({ email })?.domain],
    ['@zootools/email-spell-checker 1.12.0', (email) => spellChecker.run({ email })?.domain],
  ];
  return { rows: suggesters.map(([name, s]) => score(name, s, corpus.cases)), corpus };
}

export function printTypoTable({ rows, corpus }: ReturnType<typeof typoBench>): void {
  console.log(
    `\nTypo suggestions: one seeded corpus of ${corpus.positives.toLocaleString('en')} slips of the top ${corpus.topDomains} mail domains and ${corpus.negatives.toLocaleString('en')} real domains (free providers, companies, disposable less ${corpus.squatsLeftOut} typo-squats); each suggester with its own default domains\n`,
  );
  console.log(
    '| suggester | precision | recall | suggestions | wrong | ns/address, no suggestion needed | ns/address, typo |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const row of rows) {
    console.log(
      `| ${row.name} | ${(row.precision * 100).toFixed(2)}% | ${(row.recall * 100).toFixed(2)}% | ${row.suggestions.toLocaleString('en')} | ${row.wrong.toLocaleString('en')} | ${row.nsNegative.toFixed(0)} | ${row.nsPositive.toFixed(0)} |`,
    );
  }
}

export interface CoverageRow {
  readonly list: string;
  readonly domains: number;
  readonly before: number;
  readonly after: number;
}

/** Share of each maintained peer list that the disposable check flags, before and after. */
export function disposableCoverage(): {
  rows: CoverageRow[];
  packedChars: number;
  count: number;
  buildMs: number;
} {
  // Before issue 14: disposable-email-domains alone, entries as written (Unicode ones too).
  const before = new DomainSet([
    ...(require('disposable-email-domains') as string[]),
    ...(require('disposable-email-domains/wildcard.json') as string[]),
  ]);
  const started = performance.now();
  const after = new PackedDomainSet(DISPOSABLE_PACKED, DISPOSABLE_COUNT);
  after.has('warm.example');
  const buildMs = performance.now() - started;
  const peers: Array<[string, string[]]> = [
    [
      'burner-email-providers',
      (require('node:fs') as typeof import('node:fs'))
        .readFileSync(require.resolve('burner-email-providers/emails.txt'), 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== ''),
    ],
    [
      'mailchecker',
      [...(require('mailchecker/platform/node') as { blacklist(): Set<string> }).blacklist()],
    ],
  ];
  const rows = peers.map(([list, domains]) => {
    let hitBefore = 0;
    let hitAfter = 0;
    for (const entry of domains) {
      const parsed = parseAddress(`ann@${entry.trim()}`, { globallyDeliverable: false });
      const domain = parsed.ok ? parsed.asciiDomain : entry.trim().toLowerCase();
      if (before.hasSelfOrParent(domain)) hitBefore++;
      if (after.hasSelfOrParent(domain)) hitAfter++;
    }
    return { list, domains: domains.length, before: hitBefore, after: hitAfter };
  });
  return { rows, packedChars: DISPOSABLE_PACKED.length, count: DISPOSABLE_COUNT, buildMs };
}

export function printCoverageTable(result: ReturnType<typeof disposableCoverage>): void {
  console.log(
    `\nDisposable coverage of the maintained peer lists (each entry checked as an address's domain); the merged list: ${result.count.toLocaleString('en')} domains in one packed string of ${(result.packedChars / 1e6).toFixed(2)} MB, its table built in ${result.buildMs.toFixed(1)} ms on first use\n`,
  );
  console.log('| list | domains | flagged before (disposable-email-domains alone) | flagged now |');
  console.log('|---|---:|---:|---:|');
  for (const row of result.rows) {
    const pct = (n: number) => `${((n / row.domains) * 100).toFixed(1)}%`;
    console.log(
      `| ${row.list} | ${row.domains.toLocaleString('en')} | ${pct(row.before)} | ${pct(row.after)} |`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  printTypoTable(typoBench());
  printCoverageTable(disposableCoverage());
}
