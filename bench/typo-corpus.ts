/**
 * One seeded typo corpus for the typo bench: slips of the top mail domains, made the way
 * fingers make them, and real domains that no suggester should touch.
 *
 * Positives: each of the top mail domains (data/mail-domains.txt, most popular first) with
 * one slip of each kind at random places: a letter left out (omission), a neighbouring key
 * struck too (insertion), two letters swapped (transposition), a key next to the right one
 * (adjacent key, QWERTY), a letter doubled, and the same slips made in the suffix only (TLD
 * slips: `gmail.con`, `icloud.co`, `gmx.nte`). A slip that lands on a real domain (`gmx.de`
 * from `gmx.net`?) is not a typo and is dropped, as is one that two domains could produce.
 *
 * Negatives: every free provider, every company domain of data/company-domains.txt, and
 * every domain of the merged disposable list except the typo-squats among them (a listed
 * `gmial.com` is a slip of gmail.com, and a suggestion is the right answer there).
 */
import { FREE_PROVIDER_DOMAINS } from '../src/data/generated/lists.js';
import { COMPANY_DOMAINS, RANKED_MAIL_DOMAINS } from '../src/data/generated/typo-lists.js';
import { DISPOSABLE_PACKED } from '../src/data/generated/disposable.js';
import { seededRandom } from './corpus.js';

export type SlipKind =
  'omission' | 'insertion' | 'transposition' | 'adjacent_key' | 'doubled_letter' | 'tld_slip';

export interface TypoCase {
  readonly domain: string;
  /** The domain meant, or null for a real domain that needs no suggestion. */
  readonly meant: string | null;
  readonly kind: SlipKind | 'free_provider' | 'company' | 'disposable';
}

export interface TypoCorpus {
  readonly cases: readonly TypoCase[];
  readonly positives: number;
  readonly negatives: number;
  /** Disposable domains left out as typo-squats of a top mail domain. */
  readonly squatsLeftOut: number;
  readonly topDomains: number;
}

const ROWS = ['1234567890-', 'qwertyuiop', 'asdfghjkl', 'zxcvbnm'];

/** Keys touching `key` on a QWERTY keyboard (rows are staggered half a key). */
function neighbours(key: string): string[] {
  for (let r = 0; r < ROWS.length; r++) {
    const k = (ROWS[r] as string).indexOf(key);
    if (k === -1) continue;
    const around = [
      ROWS[r]?.[k - 1],
      ROWS[r]?.[k + 1],
      ROWS[r + 1]?.[k - 1],
      ROWS[r + 1]?.[k],
      ROWS[r - 1]?.[k],
      ROWS[r - 1]?.[k + 1],
    ];
    return around.filter((c): c is string => c !== undefined);
  }
  return [];
}

/** Every single slip of `text` (no dot is touched), by kind. */
export function slipsOf(text: string): Map<string, SlipKind> {
  const out = new Map<string, SlipKind>();
  const add = (slip: string, kind: SlipKind) => {
    if (slip !== text && !out.has(slip)) out.set(slip, kind);
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '.') continue;
    add(text.slice(0, i) + text.slice(i + 1), 'omission');
    add(text.slice(0, i) + c + text.slice(i), 'doubled_letter');
    for (const n of neighbours(c)) {
      add(text.slice(0, i) + n + text.slice(i + 1), 'adjacent_key');
      add(text.slice(0, i) + n + text.slice(i), 'insertion');
      add(text.slice(0, i + 1) + n + text.slice(i + 1), 'insertion');
    }
    const next = text[i + 1];
    if (next !== undefined && next !== '.' && next !== c) {
      add(text.slice(0, i) + next + c + text.slice(i + 2), 'transposition');
    }
  }
  return out;
}

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T;
}

/**
 * The corpus: `perKind` slips of each kind for each of the `top` most popular mail domains,
 * then the negatives. The same seed gives the same corpus on any machine.
 */
export function generateTypoCorpus(seed = 14, top = 60, perKind = 3): TypoCorpus {
  const random = seededRandom(seed);
  const real = new Set([...RANKED_MAIL_DOMAINS, ...FREE_PROVIDER_DOMAINS, ...COMPANY_DOMAINS]);
  const meantBy = new Map<string, { meant: string; kind: SlipKind } | null>();
  for (const domain of RANKED_MAIL_DOMAINS.slice(0, top)) {
    const dot = domain.indexOf('.');
    const name = domain.slice(0, dot);
    const suffix = domain.slice(dot + 1);
    const byKind = new Map<SlipKind, string[]>();
    for (const [slip, kind] of slipsOf(name)) {
      const list = byKind.get(kind) ?? [];
      list.push(`${slip}.${suffix}`);
      byKind.set(kind, list);
    }
    byKind.set(
      'tld_slip',
      [...slipsOf(suffix).keys()].map((slip) => `${name}.${slip}`),
    );
    for (const [kind, slips] of byKind) {
      for (let i = 0; i < perKind; i++) {
        const typo = pick(random, slips);
        if (real.has(typo)) continue;
        const earlier = meantBy.get(typo);
        // Two domains one slip from the same typo: no right answer, leave it out.
        if (earlier !== undefined && earlier !== null && earlier.meant !== domain) {
          meantBy.set(typo, null);
        } else if (earlier === undefined) {
          meantBy.set(typo, { meant: domain, kind });
        }
      }
    }
  }
  // A typo one slip from two mail domains (`hotmail.ds`: .de or .es?) has no right answer.
  const slipCount = new Map<string, number>();
  for (const domain of RANKED_MAIL_DOMAINS) {
    const dot = domain.indexOf('.');
    const name = domain.slice(0, dot);
    const suffix = domain.slice(dot + 1);
    const near = new Set([
      ...[...slipsOf(name).keys()].map((slip) => `${slip}.${suffix}`),
      ...[...slipsOf(suffix).keys()].map((slip) => `${name}.${slip}`),
    ]);
    for (const typo of near) slipCount.set(typo, (slipCount.get(typo) ?? 0) + 1);
  }
  const cases: TypoCase[] = [];
  for (const [domain, label] of meantBy) {
    if (label === null || (slipCount.get(domain) ?? 0) > 1) continue;
    cases.push({ domain, meant: label.meant, kind: label.kind });
  }
  const positives = cases.length;
  for (const domain of FREE_PROVIDER_DOMAINS)
    cases.push({ domain, meant: null, kind: 'free_provider' });
  for (const domain of COMPANY_DOMAINS) cases.push({ domain, meant: null, kind: 'company' });

  // Typo-squats on the disposable lists: one slip in the name and at most one in the suffix
  // of a top mail domain (or the other way round).
  const nameSlips = new Map<string, Set<string>>();
  const suffixSlips = new Map<string, Set<string>>();
  for (const domain of RANKED_MAIL_DOMAINS) {
    const dot = domain.indexOf('.');
    const name = domain.slice(0, dot);
    const suffix = domain.slice(dot + 1);
    for (const n of [name, ...slipsOf(name).keys()]) {
      const set = nameSlips.get(n) ?? new Set();
      set.add(domain);
      nameSlips.set(n, set);
    }
    suffixSlips.set(domain, new Set([suffix, ...slipsOf(suffix).keys()]));
  }
  let squatsLeftOut = 0;
  for (const domain of DISPOSABLE_PACKED.split('\n')) {
    if (real.has(domain)) continue;
    const dot = domain.indexOf('.');
    const near = nameSlips.get(domain.slice(0, dot));
    const suffix = domain.slice(dot + 1);
    if (near !== undefined && [...near].some((d) => suffixSlips.get(d)?.has(suffix))) {
      squatsLeftOut++;
      continue;
    }
    cases.push({ domain, meant: null, kind: 'disposable' });
  }
  return {
    cases,
    positives,
    negatives: cases.length - positives,
    squatsLeftOut,
    topDomains: top,
  };
}
