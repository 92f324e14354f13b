/**
 * 16 bits of Unicode properties per code point, from tables compiled at build time
 * (scripts/compile-data.mjs, Unicode 15.0 via @unicode/unicode-15.0.0): never from the
 * runtime's ICU, whose Unicode version differs between Node 20, 22 and 24 and would give one
 * address two verdicts.
 */
import {
  IDNA_RUN_STARTS,
  IDNA_RUN_VALUES,
  UTS46_MAP_RUNS,
  UTS46_MAP_TEXT,
} from '../data/generated/idna.js';

// The bits of IDNA_BITS in scripts/compile-data.mjs (test/address/idna-data.test.ts checks).
/** RFC 5892 section 3's derived property, in the two low bits. */
export const DERIVED = 3;
export const DISALLOWED = 0;
export const PVALID = 1;
export const CONTEXTJ = 2;
export const CONTEXTO = 3;
/** Controls, format characters, surrogates, private use, unassigned, spaces, separators. */
export const UNSAFE = 4;
/** General_Category=Mark. */
export const MARK = 8;
/** The scripts the CONTEXTO rules name, in bits 4-5. */
export const SCRIPT = 48;
export const GREEK = 16;
export const HEBREW = 32;
/** Hiragana, Katakana or Han. */
export const JAPANESE = 48;
/** Bidi_Class R, AL or AN: a domain with one is a Bidi domain name (RFC 5893 1.4). */
export const RTL = 128;
/** Bidi_Class (RFC 5893), in bits 8-11: `(properties & BIDI) >> BIDI_SHIFT`. */
export const BIDI = 0xf00;
export const BIDI_SHIFT = 8;
/** A class no label may hold: B, S, WS, embeddings, overrides and isolates. */
export const BIDI_OTHER = 0;
export const BIDI_L = 1;
export const BIDI_R = 2;
export const BIDI_AL = 3;
export const BIDI_AN = 4;
export const BIDI_EN = 5;
export const BIDI_ES = 6;
export const BIDI_CS = 7;
export const BIDI_ET = 8;
export const BIDI_ON = 9;
export const BIDI_BN = 10;
export const BIDI_NSM = 11;
/** Joining_Type (RFC 5892 A.1), in bits 12-14: `(properties & JOINING) >> JOINING_SHIFT`. */
export const JOINING = 0x7000;
export const JOINING_SHIFT = 12;
export const JOINING_U = 0;
export const JOINING_D = 1;
export const JOINING_L = 2;
export const JOINING_R = 3;
export const JOINING_T = 4;
export const JOINING_C = 5;
/** Canonical_Combining_Class=Virama (RFC 5892 A.1, A.2). */
export const VIRAMA = 0x8000;

function decodeBase36List(text: string, cumulative: boolean): Uint32Array {
  const parts = text.split(',');
  const out = new Uint32Array(parts.length);
  let previous = 0;
  for (let i = 0; i < parts.length; i++) {
    const value = parseInt(parts[i] as string, 36);
    previous = cumulative ? previous + value : value;
    out[i] = previous;
  }
  return out;
}

// About 3,300 runs: decoding them costs well under a millisecond at import.
const RUN_STARTS = decodeBase36List(IDNA_RUN_STARTS, true);
const RUN_VALUES = Uint16Array.from(decodeBase36List(IDNA_RUN_VALUES, false));
const ASCII_PROPERTIES = new Uint16Array(128);
for (let code = 0; code < 128; code++) ASCII_PROPERTIES[code] = lookup(code);

function lookup(codePoint: number): number {
  // The last run that starts at or before the code point: a binary search, 12 steps.
  let low = 0;
  let high = RUN_STARTS.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >>> 1;
    if ((RUN_STARTS[middle] as number) <= codePoint) low = middle;
    else high = middle - 1;
  }
  return RUN_VALUES[low] as number;
}

/** The property bits of one code point (see the constants above). */
export function codePointProperties(codePoint: number): number {
  return codePoint < 0x80 ? (ASCII_PROPERTIES[codePoint] as number) : lookup(codePoint);
}

// UTS-46 mapping runs (see scripts/compile-data.mjs): start, count and step of each.
const MAP_STARTS = new Uint32Array(UTS46_MAP_TEXT.length);
const MAP_COUNTS = new Uint16Array(UTS46_MAP_TEXT.length);
const MAP_STEPS = new Uint8Array(UTS46_MAP_TEXT.length);
{
  let start = 0;
  const runs = UTS46_MAP_RUNS.split(',');
  for (let i = 0; i < runs.length; i++) {
    const [delta, count, step] = (runs[i] as string).split(' ');
    start += parseInt(delta as string, 36);
    MAP_STARTS[i] = start;
    MAP_COUNTS[i] = parseInt(count as string, 36);
    MAP_STEPS[i] = parseInt(step as string, 36);
  }
}

/**
 * The UTS-46 mapping of one code point (nontransitional, STD3 rules, from tr46's table): the
 * text it maps to, '' when it is ignored, or undefined when it stays as it is (valid,
 * deviation, or disallowed, which the label rules then refuse).
 */
export function uts46Mapping(codePoint: number): string | undefined {
  let low = 0;
  let high = MAP_STARTS.length - 1;
  if (high < 0 || codePoint < (MAP_STARTS[0] as number)) return undefined;
  while (low < high) {
    const middle = (low + high + 1) >>> 1;
    if ((MAP_STARTS[middle] as number) <= codePoint) low = middle;
    else high = middle - 1;
  }
  const offset = codePoint - (MAP_STARTS[low] as number);
  const step = MAP_STEPS[low] as number;
  if (offset % step !== 0 || offset / step >= (MAP_COUNTS[low] as number)) return undefined;
  const text = UTS46_MAP_TEXT[low] as string;
  return offset === 0 ? text : String.fromCodePoint((text.codePointAt(0) as number) + offset);
}
