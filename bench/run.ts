/**
 * npm run bench: one table of throughput for mailverdict and its peers on the same seeded
 * corpus in the same process, as ratios to validator's isEmail; then hostile inputs and cold
 * start. Figures are measurements of this run on this machine, never asserted by tests.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { isEmailValid } from '@hapi/address';
import emailValidator from 'email-validator';
import validator from 'validator';
import { createEngine, parseAddress } from '../src/index.js';
import { browserBundleSizes, printBundleSizes } from './bundle.js';
import { generateCorpus } from './corpus.js';
import { availabilityBench, printAvailabilityTable } from './availability.js';
import { httpBench, printHttpTable } from './http.js';
import { chargedThroughputBench, printChargedThroughputTable } from './charged-throughput.js';
import { ipFilterBench, printIpFilterTable, printServiceTable, serviceBench } from './service.js';
import { printSmtpTable, smtpBench } from './smtp.js';
import { disposableCoverage, printCoverageTable, printTypoTable, typoBench } from './typo.js';
import { batchBench, printBatchTable } from './batch.js';
import { filterBatchBench, printFilterBatchTable } from './filter-batch.js';
import { printScaleTable, scaleBench } from './scale.js';
import { printVerifyManyTable, verifyManyBench } from './verify-many.js';

const SIZE = Number(process.env.BENCH_SIZE ?? 200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const corpus = generateCorpus(SIZE);

interface Row {
  name: string;
  perSecond: number;
  accepted: number;
}

/** Best of ROUNDS passes over the corpus (after one warm-up pass). */
async function measure(name: string, pass: () => number | Promise<number>): Promise<Row> {
  await pass();
  let best = 0;
  let accepted = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    accepted = await pass();
    const seconds = (performance.now() - started) / 1000;
    best = Math.max(best, corpus.length / seconds);
  }
  return { name, perSecond: best, accepted };
}

function count(check: (address: string) => boolean): () => number {
  return () => {
    let accepted = 0;
    for (const address of corpus) if (check(address)) accepted++;
    return accepted;
  };
}

const offline = createEngine({ offline: true });
function verifyPass(method: 'quick' | 'standard') {
  return async () => {
    let accepted = 0;
    for (const address of corpus) {
      const verdict = await offline.verify(address, { method });
      if (verdict.state !== 'undeliverable') accepted++;
    }
    return accepted;
  };
}

// isEmail first: every ratio in the table is to it.
const passes: Array<[name: string, pass: () => number | Promise<number>]> = [
  ['validator isEmail', count((a) => validator.isEmail(a))],
  ['email-validator validate', count((a) => emailValidator.validate(a))],
  ['@hapi/address isEmailValid', count((a) => isEmailValid(a))],
  ['mailverdict parseAddress', count((a) => parseAddress(a).ok)],
  ['mailverdict verify quick (offline)', verifyPass('quick')],
  ['mailverdict verify standard (offline)', verifyPass('standard')],
  [
    'mailverdict verifySync quick (offline)',
    count((a) => offline.verifySync(a, { method: 'quick' }).state !== 'undeliverable'),
  ],
  [
    'mailverdict verifySync standard (offline)',
    count((a) => offline.verifySync(a, { method: 'standard' }).state !== 'undeliverable'),
  ],
];
const rows: Row[] = [];
for (const [name, pass] of passes) rows.push(await measure(name, pass));

const baseline = rows[0]?.perSecond ?? 1;
console.log(
  `\nSyntax and offline verification: ${corpus.length.toLocaleString('en')} addresses (seeded), best of ${ROUNDS}, Node ${process.version}\n`,
);
console.log('| implementation | addresses/s | vs isEmail | accepted |');
console.log('|---|---:|---:|---:|');
for (const row of rows) {
  console.log(
    `| ${row.name} | ${Math.round(row.perSecond).toLocaleString('en')} | ${(row.perSecond / baseline).toFixed(2)}x | ${row.accepted.toLocaleString('en')} |`,
  );
}

// Hostile inputs: 1 MB strings of the characters that make naive parsers backtrack.
console.log('\nHostile 1 MB inputs (parseAddress, default and rfc profiles)\n');
console.log('| input | default ms | rfc ms | code |');
console.log('|---|---:|---:|---|');
for (const [name, unit] of [
  ['a', 'a'],
  ['.', '.'],
  ['"', '"'],
  ['@', '@'],
  ['\\', '\\'],
  ['a@ mixed', 'a@.'],
] as const) {
  const input = unit.repeat(Math.ceil(1_000_000 / unit.length));
  const time = (profile: 'default' | 'rfc') => {
    const started = performance.now();
    const result = parseAddress(input, { profile });
    return { ms: performance.now() - started, code: result.ok ? 'ok' : result.code };
  };
  const d = time('default');
  const r = time('rfc');
  console.log(`| ${name} x 1 MB | ${d.ms.toFixed(4)} | ${r.ms.toFixed(4)} | ${d.code} |`);
}

printBundleSizes(await browserBundleSizes());

// Typo suggestions against mailcheck and @zootools/email-spell-checker, and the disposable
// list's coverage of the maintained peer lists (issue 14).
printTypoTable(typoBench());
printCoverageTable(disposableCoverage());

// Cold start: a fresh process importing the built package and producing its first verdict.
const root = fileURLToPath(new URL('..', import.meta.url));
function coldStart(args: string[]): { ms: number; rssMb: number } {
  const samples: Array<{ ms: number; rssMb: number }> = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    const child = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' });
    const ms = performance.now() - started;
    if (child.status !== 0) throw new Error(`cold start failed: ${child.stderr}`);
    const rssKb = Number(child.stdout.trim().split('\n').at(-1));
    samples.push({ ms, rssMb: rssKb / 1024 });
  }
  samples.sort((a, b) => a.ms - b.ms);
  return samples[2] as { ms: number; rssMb: number };
}
const bare = coldStart(['-e', 'console.log(process.resourceUsage().maxRSS)']);
const first = coldStart([
  '--input-type=module',
  '-e',
  "const { createEngine } = await import('./dist/index.js'); const v = await createEngine({ offline: true }).verify('ann@mailinator.com', { method: 'standard' }); if (v.state !== 'risky') process.exit(1); console.log(process.resourceUsage().maxRSS)",
]);
console.log(
  '\nCold start (median of 5 fresh processes; needs `npm run build`). Target: at most +100 ms (or 2.5x) and +30 MB over node -e 0\n',
);
console.log('| process | wall ms | max RSS MB | over node -e 0 |');
console.log('|---|---:|---:|---|');
console.log(`| node -e 0 | ${bare.ms.toFixed(1)} | ${bare.rssMb.toFixed(1)} | |`);
console.log(
  `| import mailverdict + first standard verdict (offline) | ${first.ms.toFixed(1)} | ${first.rssMb.toFixed(1)} | +${(first.ms - bare.ms).toFixed(1)} ms (${(first.ms / bare.ms).toFixed(2)}x), +${(first.rssMb - bare.rssMb).toFixed(1)} MB |`,
);

// verifyMany beside a plain await loop, and against the DNS ideal.
printVerifyManyTable(await verifyManyBench());

// Batch jobs end to end: a 50,000-address job against a 20 ms loopback DNS server, on SQLite,
// and its download streamed in each format (issue 12).
printBatchTable(await batchBench());

// Scale-out: the same job on BullMQ + Redis with 1, 2 and 4 worker processes (issue 15).
printScaleTable(await scaleBench());

// A batch job with one IP filter beside the same job without, on SQLite and on BullMQ: the
// filter is asked inside the engine's per-domain work (issue 22).
printFilterBatchTable(await filterBatchBench());

// The service core around the engine, on memory and SQLite.
printServiceTable(await serviceBench(corpus));

// Charged verifies on the durable path, sequential and with 50 callers, authenticated too,
// beside the raw better-sqlite3 ceiling measured in the same run (issue 11).
printChargedThroughputTable(await chargedThroughputBench(corpus));
// Filter matching does not grow with the number of IP filters (a lookup, not a scan).
printIpFilterTable(await ipFilterBench());

// SMTP: session reuse against one connection per address, on loopback smtp-server.
printSmtpTable(await smtpBench());

// HTTP: GET /v1/verify through mailverdict/node beside a bare node:http server (the ceiling).
printHttpTable(await httpBench());

// Other clients while a batch job, downloads and hostile bodies run: GET /v1/verify at a
// steady rate from a process of its own, p50/p99 beside alone's (issue 21).
printAvailabilityTable(await availabilityBench());
