/**
 * Unicode rules shared by the local part and the domain. Every regular expression here is a
 * single character class: it cannot backtrack, so scanning stays linear.
 */
import { codePointProperties, MARK, UNSAFE } from './code-points.js';

// python-email-validator's unsafe set: controls, format characters (zero-width space, soft
// hyphen, bidi overrides), surrogates, private use, unassigned, and every kind of space or
// line/paragraph separator. From the compiled tables, not \p{...}: "unassigned" must mean
// the same on every runtime.

/**
 * The first unsafe character of `text`, or undefined. Linear: one table lookup a code point.
 * `allowSpace` lets U+0020 through (inside a quoted local part, RFC 5321 qtextSMTP has it).
 */
export function findUnsafeCharacter(text: string, allowSpace = false): string | undefined {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) {
      if ((code <= 0x20 || code === 0x7f) && !(allowSpace && code === 0x20)) return text[i];
      continue;
    }
    const codePoint = text.codePointAt(i) as number;
    if ((codePointProperties(codePoint) & UNSAFE) !== 0) return String.fromCodePoint(codePoint);
    if (codePoint > 0xffff) i++;
  }
  return undefined;
}

/** True when `text` begins with a combining mark, which would attach to what precedes it. */
export function startsWithCombiningMark(text: string): boolean {
  return text.length > 0 && (codePointProperties(text.codePointAt(0) as number) & MARK) !== 0;
}

/** Length in octets of UTF-8, the unit of every SMTP limit (RFC 5321 4.5.3.1, RFC 6531). */
export function utf8Length(text: string): number {
  let octets = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) octets += 1;
    else if (unit < 0x800) octets += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        octets += 4;
        i++;
      } else octets += 3;
    } else octets += 3;
  }
  return octets;
}

export function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** a-z, A-Z, 0-9 and hyphen: the letters-digits-hyphen rule of RFC 1035 2.3.1. */
export function isLdhCode(code: number): boolean {
  return (
    (code >= 0x61 && code <= 0x7a) ||
    (code >= 0x30 && code <= 0x39) ||
    code === 0x2d ||
    (code >= 0x41 && code <= 0x5a)
  );
}

const SCRIPT_TESTS: ReadonlyArray<readonly [string, RegExp]> = [
  ['Latin', /\p{Script=Latin}/u],
  ['Cyrillic', /\p{Script=Cyrillic}/u],
  ['Greek', /\p{Script=Greek}/u],
  ['Armenian', /\p{Script=Armenian}/u],
  ['Han', /\p{Script=Han}/u],
  ['Hiragana', /\p{Script=Hiragana}/u],
  ['Katakana', /\p{Script=Katakana}/u],
  ['Hangul', /\p{Script=Hangul}/u],
  ['Bopomofo', /\p{Script=Bopomofo}/u],
];
const OTHER_LETTER = /\p{L}/u;

// UTS 39 5.2 "highly restrictive": one script, or Latin with the scripts that are written
// together with it in Japanese, Chinese or Korean.
const ALLOWED_SCRIPT_MIXES: ReadonlyArray<ReadonlySet<string>> = [
  new Set(['Latin', 'Han', 'Hiragana', 'Katakana']),
  new Set(['Latin', 'Han', 'Bopomofo']),
  new Set(['Latin', 'Han', 'Hangul']),
];

/**
 * The script of a letter, by the blocks that hold whole scripts (most labels never reach the
 * regular expressions), else by Unicode's Script property. Undefined for digits, marks,
 * punctuation: characters of no particular script.
 */
function scriptOf(char: string): string | undefined {
  const code = char.codePointAt(0) as number;
  if (code < 0x250) {
    if ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a) return 'Latin';
    return code >= 0xc0 && code !== 0xd7 && code !== 0xf7 ? 'Latin' : undefined;
  }
  if (code >= 0x300 && code <= 0x36f) return undefined; // combining marks: inherited
  if (code >= 0x370 && code <= 0x3ff) return code >= 0x386 ? 'Greek' : undefined;
  if (code >= 0x400 && code <= 0x52f) return 'Cyrillic';
  if (code >= 0x1e00 && code <= 0x1eff) return 'Latin';
  if (code >= 0x3040 && code <= 0x309f) return 'Hiragana';
  if (code >= 0x30a0 && code <= 0x30fa) return 'Katakana';
  if ((code >= 0x4e00 && code <= 0x9fff) || (code >= 0x3400 && code <= 0x4dbf)) return 'Han';
  if (code >= 0xac00 && code <= 0xd7a3) return 'Hangul';
  for (const [name, test] of SCRIPT_TESTS) if (test.test(char)) return name;
  // Any other script (Arabic, Devanagari, ...) counts as itself, named by its 256-code-point
  // block: close enough to tell two scripts apart in one label.
  return OTHER_LETTER.test(char) ? `other-${code >> 8}` : undefined;
}

/**
 * True when one label mixes scripts the way homograph attacks do (Latin with Cyrillic or
 * Greek: `pаypal` with a Cyrillic а). Common and inherited characters (digits, hyphen,
 * combining marks) belong to no script here.
 */
export function isMixedScript(label: string): boolean {
  if (isAscii(label)) return false;
  const scripts = new Set<string>();
  for (const char of label) {
    const script = scriptOf(char);
    if (script !== undefined) scripts.add(script);
  }
  if (scripts.size <= 1) return false;
  return !ALLOWED_SCRIPT_MIXES.some((allowed) => [...scripts].every((s) => allowed.has(s)));
}

/**
 * `text.lastIndexOf(char)` for one UTF-16 unit, by hand: the built-in is a call into the
 * runtime, and the characters we look for (the @-sign, the TLD's dot) sit near the end.
 * bench/: about 5% off the parse of an invalid address, and 20-30 ns off every verification
 * in the domain check.
 */
export function lastIndexOfCode(text: string, code: number): number {
  let i = text.length - 1;
  while (i >= 0 && text.charCodeAt(i) !== code) i--;
  return i;
}
