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

/**
 * The base-36 numbers of a generated list (separated by ',' or ' '), in one pass of
 * charCodeAt: split and parseInt took about 10 ms of cold start for these tables.
 */
function decodeBase36(text: string): Uint32Array {
  let count = 1;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x2c || code === 0x20) count++;
  }
  const out = new Uint32Array(count);
  let index = 0;
  let value = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x2c || code === 0x20) {
      out[index++] = value;
      value = 0;
    } else {
      value = value * 36 + (code <= 0x39 ? code - 0x30 : code - 0x57);
    }
  }
  out[index] = value;
  return out;
}

interface PropertyTables {
  /** Start of each run of code points with equal properties. */
  readonly starts: Uint32Array;
  readonly values: Uint16Array;
  readonly ascii: Uint16Array;
}

// Decoded on first use: a parser that only ever sees ASCII never pays for the tables.
let propertyTables: PropertyTables | undefined;

function loadPropertyTables(): PropertyTables {
  const starts = decodeBase36(IDNA_RUN_STARTS);
  for (let i = 1; i < starts.length; i++)
    starts[i] = (starts[i] as number) + (starts[i - 1] as number);
  const values = Uint16Array.from(decodeBase36(IDNA_RUN_VALUES));
  const ascii = new Uint16Array(128);
  propertyTables = { starts, values, ascii };
  for (let code = 0; code < 128; code++) ascii[code] = lookup(propertyTables, code);
  return propertyTables;
}

function lookup({ starts, values }: PropertyTables, codePoint: number): number {
  // The last run that starts at or before the code point: a binary search, 12 steps.
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >>> 1;
    if ((starts[middle] as number) <= codePoint) low = middle;
    else high = middle - 1;
  }
  return values[low] as number;
}

/** The property bits of one code point (see the constants above). */
export function codePointProperties(codePoint: number): number {
  const tables = propertyTables ?? loadPropertyTables();
  return codePoint < 0x80 ? (tables.ascii[codePoint] as number) : lookup(tables, codePoint);
}

/** UTS-46 mapping runs (see scripts/compile-data.mjs): start, count and step of each. */
interface MappingTables {
  readonly starts: Uint32Array;
  readonly counts: Uint32Array;
  readonly steps: Uint32Array;
  readonly texts: readonly string[];
}

let mappingTables: MappingTables | undefined;

function loadMappingTables(): MappingTables {
  const triples = decodeBase36(UTS46_MAP_RUNS);
  const runs = triples.length / 3;
  const starts = new Uint32Array(runs);
  const counts = new Uint32Array(runs);
  const steps = new Uint32Array(runs);
  let start = 0;
  for (let i = 0; i < runs; i++) {
    start += triples[3 * i] as number;
    starts[i] = start;
    counts[i] = triples[3 * i + 1] as number;
    steps[i] = triples[3 * i + 2] as number;
  }
  mappingTables = { starts, counts, steps, texts: UTS46_MAP_TEXT.split('\t') };
  return mappingTables;
}

/**
 * The UTS-46 mapping of one code point (nontransitional, STD3 rules, from tr46's table): the
 * text it maps to, '' when it is ignored, or undefined when it stays as it is (valid,
 * deviation, or disallowed, which the label rules then refuse).
 */
export function uts46Mapping(codePoint: number): string | undefined {
  const { starts, counts, steps, texts } = mappingTables ?? loadMappingTables();
  let low = 0;
  let high = starts.length - 1;
  if (high < 0 || codePoint < (starts[0] as number)) return undefined;
  while (low < high) {
    const middle = (low + high + 1) >>> 1;
    if ((starts[middle] as number) <= codePoint) low = middle;
    else high = middle - 1;
  }
  const offset = codePoint - (starts[low] as number);
  const step = steps[low] as number;
  if (offset % step !== 0 || offset / step >= (counts[low] as number)) return undefined;
  const text = texts[low] as string;
  return offset === 0 || text === ''
    ? text
    : String.fromCodePoint((text.codePointAt(0) as number) + offset);
}
