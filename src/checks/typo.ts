import { KNOWN_MAIL_DOMAINS, RANKED_MAIL_DOMAINS } from '../data/typo-lists.js';
import { pass, risky, type Checker } from './checker.js';

/**
 * What the typo checker knows: well-known mail domains, most popular first (the ones it may
 * suggest), and real domains that are never a typo whatever they look like (`gmx.com` is
 * one keystroke from `gmx.de`, and a company of its own).
 */
export interface TypoLists {
  readonly ranked: readonly string[];
  readonly known?: Iterable<string>;
}

/**
 * Suggests the well-known mail domain a domain is one slip away from, or null.
 *
 * A slip is what fingers do on a QWERTY keyboard: a letter left out, a letter doubled or
 * struck with its neighbour, a key next to the right one, two letters swapped. The name
 * (`gmial` in `gmial.com`) and the suffix (`con` in `gmail.con`) may each hold one slip.
 * Names of four letters or fewer take fewer kinds of slip (see nameAllows). Between two
 * candidates, the one with fewer slips wins, then the more popular.
 *
 * Known domains are a Set lookup; for the others, candidates come from a symmetric-delete
 * index of the names (each name and each name less one letter, hashed), so an unknown
 * domain costs a few hashes per letter of its name and a bit test each, never a scan.
 *
 * @example
 * const suggest = createTypoSuggester();
 * suggest('gmial.com'); // 'gmail.com'
 * suggest('gmx.com'); // null: a real domain
 */
export function createTypoSuggester(
  lists: TypoLists = DEFAULT_LISTS,
): (domain: string) => string | null {
  // Targets grouped by name (`yahoo` has twenty suffixes): a name is compared once.
  const groups: NameGroup[] = [];
  const groupOf = new Map<string, NameGroup>();
  const known = new Set<string>(lists.known ?? []);
  const index = new Map<number, number[]>();
  const bits = new Int32Array(BITS_MASK + 1);
  const hashes = new Int32Array(MAX_NAME + 2);
  let longest = 0;
  let rank = 0;
  for (const domain of lists.ranked) {
    known.add(domain);
    const dot = domain.indexOf('.');
    if (dot <= 0 || dot > MAX_NAME) continue;
    const name = domain.slice(0, dot);
    const target: Target = { domain, suffix: domain.slice(dot + 1), rank: rank++ };
    let group = groupOf.get(name);
    if (group !== undefined) {
      group.targets.push(target);
      continue;
    }
    group = { name, targets: [target] };
    groupOf.set(name, group);
    const id = groups.push(group) - 1;
    longest = Math.max(longest, name.length);
    const count = deleteHashes(name, name.length, hashes);
    for (let k = 0; k < count; k++) {
      const key = hashes[k] as number;
      bits[(key >>> 5) & BITS_MASK]! |= 1 << (key & 31);
      const ids = index.get(key);
      if (ids === undefined) index.set(key, [id]);
      else if (!ids.includes(id)) ids.push(id);
    }
  }
  const seen = new Uint8Array(groups.length);
  const found: number[] = [];

  return function suggest(domain: string): string | null {
    // Most domains are known or nowhere near a mail domain: answer those first.
    if (known.has(domain)) return null;
    const dot = domain.indexOf('.');
    if (dot <= 0 || dot > longest + 1) return null;
    found.length = 0;
    const count = deleteHashes(domain, dot, hashes);
    for (let k = 0; k < count; k++) {
      const key = hashes[k] as number;
      // A bit per key first: most unknown names share no key with any mail domain's name, and
      // a bit test costs a fraction of a Map lookup.
      if ((bits[(key >>> 5) & BITS_MASK] as number) & (1 << (key & 31))) collect(index.get(key));
    }
    if (found.length === 0) return null;

    const name = domain.slice(0, dot);
    const suffix = domain.slice(dot + 1);
    let best: Target | undefined;
    let bestSlips = 3;
    for (const id of found) {
      seen[id] = 0;
      const group = groups[id] as NameGroup;
      const nameSlip = slipOf(name, group.name);
      if (nameSlip === NONE || !nameAllows(name, group.name, nameSlip)) continue;
      for (const target of group.targets) {
        const suffixSlip = slipOf(suffix, target.suffix);
        if (suffixSlip === NONE) continue;
        const slips = (nameSlip === SAME ? 0 : 1) + (suffixSlip === SAME ? 0 : 1);
        // Fewer slips first, then the more popular domain (the lower rank).
        if (
          slips > 0 &&
          (slips < bestSlips || (slips === bestSlips && target.rank < (best?.rank ?? 0)))
        ) {
          best = target;
          bestSlips = slips;
        }
      }
    }
    return best === undefined ? null : best.domain;
  };

  function collect(ids: number[] | undefined): void {
    if (ids === undefined) return;
    for (const id of ids) {
      if (seen[id] === 0) {
        seen[id] = 1;
        found.push(id);
      }
    }
  }
}

interface NameGroup {
  readonly name: string;
  /** Most popular first. */
  readonly targets: Target[];
}

interface Target {
  readonly domain: string;
  readonly suffix: string;
  readonly rank: number;
}

/**
 * Flags a domain that looks like a slip of a well-known mail domain (`gmial.com`,
 * `gmail.con`) and records the address it was probably meant to be: the `possible_typo`
 * factor lowers the score and decides no state by itself (engine/score.ts).
 */
export function typo(suggest: (domain: string) => string | null = defaultSuggester()): Checker {
  const possibleTypo = risky('typo', 'possible_typo', 'possible_typo');
  const noTypo = pass('typo');
  return {
    name: 'typo',
    run(facts) {
      const { parsed } = facts;
      if (parsed.domainLiteral) return noTypo;
      const domain = suggest(parsed.asciiDomain);
      if (domain === null) return noTypo;
      // The local part as written in the normalized address (quotes and all).
      facts.didYouMean = `${parsed.address.slice(0, parsed.address.lastIndexOf('@'))}@${domain}`;
      return possibleTypo;
    },
  };
}

const DEFAULT_LISTS: TypoLists = { ranked: RANKED_MAIL_DOMAINS, known: KNOWN_MAIL_DOMAINS };

let defaultSuggest: ((domain: string) => string | null) | undefined;
/** The suggester over the default lists, built on first use and shared. */
export function defaultSuggester(): (domain: string) => string | null {
  return (defaultSuggest ??= createTypoSuggester());
}

// Outcomes of comparing what was typed with what was meant.
const SAME = 0;
const NONE = -1;
const OMITTED = 1;
const INSERTED = 2;
const DOUBLED = 3;
const NEIGHBOUR = 4;
const SWAPPED = 5;
/** SAME, NONE, or which slip. */
type AnySlip =
  | typeof SAME
  | typeof NONE
  | typeof OMITTED
  | typeof INSERTED
  | typeof DOUBLED
  | typeof NEIGHBOUR
  | typeof SWAPPED;

/**
 * Short names need more care: one keystroke from `aol` or `live` is often another real
 * domain (`all.com`, `life.nl`, `mil.ru`), so a name of three or four letters takes only the
 * slips that seldom make a word (a doubled letter, two swapped, a neighbour key struck too,
 * or a digit struck for a letter), and one of two letters (`ig`, `qq`) or of digits only
 * (`163`, `126`) only a slip of its suffix.
 */
function nameAllows(typed: string, intended: string, slip: AnySlip): boolean {
  if (slip === SAME) return true;
  // Every slip of a number is another number, and numeric names are each a real site
  // (162.com, 126.com, 163.com): only their suffix may hold a slip.
  if (isDigits(intended)) return false;
  if (intended.length >= 5) return true;
  if (intended.length <= 2) return false;
  if (slip === DOUBLED || slip === SWAPPED || slip === INSERTED) return true;
  return slip === NEIGHBOUR && hasDigitWhereLetter(typed, intended);
}

function isDigits(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

function hasDigitWhereLetter(typed: string, intended: string): boolean {
  for (let i = 0; i < typed.length; i++) {
    const c = typed.charCodeAt(i);
    const meant = intended.charCodeAt(i);
    if (c === meant) continue;
    // Digit for digit is no slip to undo: 162.com and 163.com are two real sites.
    return ((c >= 0x30 && c <= 0x39) || c === 0x2d) && meant >= 0x61 && meant <= 0x7a;
  }
  return false;
}

/** How `typed` differs from `intended` by one keyboard slip, or NONE. */
export function slipOf(typed: string, intended: string): AnySlip {
  const t = typed.length;
  const n = intended.length;
  let i = 0;
  while (i < t && i < n && typed.charCodeAt(i) === intended.charCodeAt(i)) i++;
  if (t === n) {
    if (i === t) return SAME;
    if (sameFrom(typed, i + 1, intended, i + 1) && adjacent(typed[i], intended[i])) {
      return NEIGHBOUR;
    }
    if (
      i + 1 < t &&
      typed[i] === intended[i + 1] &&
      typed[i + 1] === intended[i] &&
      sameFrom(typed, i + 2, intended, i + 2)
    ) {
      return SWAPPED;
    }
    return NONE;
  }
  if (t === n - 1) return sameFrom(typed, i, intended, i + 1) ? OMITTED : NONE;
  if (t === n + 1) {
    // The extra key is at i or, when it repeats its left neighbour, anywhere in that run.
    if (!sameFrom(typed, i + 1, intended, i)) return NONE;
    const extra = typed[i];
    const before = typed[i - 1];
    const after = typed[i + 1];
    if (extra === before || extra === after) return DOUBLED;
    return adjacent(extra, before) || adjacent(extra, after) ? INSERTED : NONE;
  }
  return NONE;
}

function sameFrom(a: string, i: number, b: string, j: number): boolean {
  if (a.length - i !== b.length - j) return false;
  for (; i < a.length; i++, j++) if (a.charCodeAt(i) !== b.charCodeAt(j)) return false;
  return true;
}

const ROWS = ['1234567890-', 'qwertyuiop', 'asdfghjkl', 'zxcvbnm'];
const NEIGHBOURS = new Map<string, string>();
for (let r = 0; r < ROWS.length; r++) {
  const row = ROWS[r] as string;
  for (let k = 0; k < row.length; k++) {
    let near = (row[k - 1] ?? '') + (row[k + 1] ?? '');
    // Staggered rows: key k touches keys k-1 and k of the row below, k and k+1 above.
    near += (ROWS[r + 1]?.[k - 1] ?? '') + (ROWS[r + 1]?.[k] ?? '');
    near += (ROWS[r - 1]?.[k] ?? '') + (ROWS[r - 1]?.[k + 1] ?? '');
    NEIGHBOURS.set(row[k] as string, near);
  }
}

/** Two keys that touch on a QWERTY keyboard. */
export function adjacent(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  return NEIGHBOURS.get(a)?.includes(b) === true;
}

// Polynomial hashes kept within 30 bits, so that V8 keeps them as small integers in the Map.
const BASE = 0x01000193;
const MASK = 0x3fffffff;
/** Names longer than this are no mail domain's: they are never looked up. */
const MAX_NAME = 62;
/** A 64-kbit filter of the index's keys (8 KB). */
const BITS_MASK = (1 << 11) - 1;
const POWERS = new Int32Array(MAX_NAME + 2);
POWERS[0] = 1;
for (let i = 1; i < POWERS.length; i++) POWERS[i] = Math.imul(POWERS[i - 1] as number, BASE);
const PREFIX = new Int32Array(MAX_NAME + 2);
const SUFFIX = new Int32Array(MAX_NAME + 2);

/**
 * Writes into `out` the hash of `text.slice(0, end)` and of it less each one character, in
 * O(end) and with no string built: hash(a + b) = hash(a) * BASE^|b| + hash(b).
 * Returns how many hashes it wrote (end + 1).
 */
function deleteHashes(text: string, end: number, out: Int32Array): number {
  PREFIX[0] = 0;
  for (let i = 0; i < end; i++) {
    PREFIX[i + 1] = (Math.imul(PREFIX[i] as number, BASE) + text.charCodeAt(i)) | 0;
  }
  SUFFIX[end] = 0;
  for (let i = end - 1; i >= 0; i--) {
    SUFFIX[i] =
      (Math.imul(text.charCodeAt(i), POWERS[end - 1 - i] as number) + (SUFFIX[i + 1] as number)) |
      0;
  }
  out[0] = (PREFIX[end] as number) & MASK;
  for (let i = 0; i < end; i++) {
    const without =
      Math.imul(PREFIX[i] as number, POWERS[end - 1 - i] as number) + (SUFFIX[i + 1] as number);
    out[i + 1] = without & MASK;
  }
  return end + 1;
}
