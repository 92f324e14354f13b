/**
 * IDNA 2008 for the domain, one rule set for every label (RFC 5891 5.3, 5.4): a U-label as written
 * and the A-label that encodes it (`xn--...`, decoded and checked again) get the same verdict.
 *
 * - UTS-46 mapping (nontransitional, STD3 rules; tr46's table compiled at build time), after
 *   refusing unsafe characters as written (a soft hyphen would vanish in the mapping).
 * - RFC 5891 5.4 / UTS-46 CheckHyphens: no hyphen at either end, no `--` in positions 3-4.
 * - RFC 5892: every code point PVALID by the derived property (compiled tables, see
 *   code-points.ts), CONTEXTO code points only in their context (Appendix A.3-A.9).
 * - UTS-46 CheckJoiners (CONTEXTJ, RFC 5892 A.1/A.2) and CheckBidi (RFC 5893, all six rules),
 *   from compiled Joining_Type, virama and Bidi_Class tables.
 *
 * tr46 is the oracle: its table is compiled in, and the tests hold every verdict to it.
 *
 * Linear in the domain: one pass of table lookups, label lengths bounded before punycode.
 */
import punycode from 'punycode/punycode.js';
import {
  BIDI,
  BIDI_AL,
  BIDI_AN,
  BIDI_BN,
  BIDI_CS,
  BIDI_EN,
  BIDI_ES,
  BIDI_ET,
  BIDI_L,
  BIDI_NSM,
  BIDI_ON,
  BIDI_OTHER,
  BIDI_R,
  BIDI_SHIFT,
  codePointProperties,
  CONTEXTJ,
  CONTEXTO,
  DERIVED,
  DISALLOWED,
  GREEK,
  HEBREW,
  JAPANESE,
  JOINING,
  JOINING_D,
  JOINING_L,
  JOINING_R,
  JOINING_SHIFT,
  JOINING_T,
  JOINING_U,
  MARK,
  PVALID,
  RTL,
  SCRIPT,
  UNSAFE,
  uts46Mapping,
  VIRAMA,
} from './code-points.js';
import { describeCharacter, partFailure as fail, type PartFailure } from './errors.js';
import { MAX_DOMAIN_OCTETS, MAX_LABEL_OCTETS } from './limits.js';
import { isAscii, isLdhCode, isMixedScript } from './unicode.js';

export interface IdnaDomain {
  readonly ok: true;
  /** Lowercase A-label form. */
  readonly ascii: string;
  /** Lowercase U-label form. */
  readonly unicode: string;
  /** A label mixes scripts the way homograph attacks do. */
  readonly confusable: boolean;
}

// U+3002 IDEOGRAPHIC FULL STOP, U+FF0E FULLWIDTH FULL STOP, U+FF61 HALFWIDTH IDEOGRAPHIC FULL
// STOP: UTS-46 maps each to '.', so a user typing in a CJK input method still gets a dot.
function isDot(code: number): boolean {
  return code === 0x2e || code === 0x3002 || code === 0xff0e || code === 0xff61;
}
// A single character class: split cannot backtrack.
const DOTS = /[.\u3002\uff0e\uff61]/u;

// A label of at most 63 octets as an A-label has at most 63 code points, and NFC composes at
// most four code points into one: anything longer, as written or once mapped, is refused at
// once, which keeps every step bounded however much a mapping expands (U+FDFA is 18).
const MAX_RAW_LABEL_CODE_POINTS = 4 * MAX_LABEL_OCTETS;
const MAX_MAPPED_LABEL_UNITS = 4 * MAX_LABEL_OCTETS;
const MAX_MAPPED_DOMAIN_UNITS = 4 * (MAX_DOMAIN_OCTETS + 1);

/**
 * Maps and checks a domain that has non-ASCII characters or A-labels. Expects no empty input;
 * empty labels, lengths of the whole and the deliverability rules are the caller's.
 * `joiners`: ZWNJ and ZWJ are held to IDNA 2008's CONTEXTJ rules (the default, IDNA alone);
 * false refuses them as the unsafe characters they are anywhere else in an address
 * (python-email-validator's rule, the default profile's).
 */
export function toIdnaDomain(raw: string, joiners = true): IdnaDomain | PartFailure {
  const refused = checkAsWritten(raw);
  if (refused !== undefined) return refused;

  const written = raw.split(DOTS);
  const asciiLabels: string[] = [];
  const unicodeLabels: string[] = [];
  let confusable = false;
  let mappedLength = 0;
  let asciiLength = 0;
  for (const writtenLabel of written) {
    const mapped = mapLabel(writtenLabel);
    if (typeof mapped !== 'string') return mapped;
    mappedLength += mapped.length + 1;
    if (mappedLength > MAX_MAPPED_DOMAIN_UNITS) return domainTooLong(mappedLength);
    let ulabel = mapped;
    let alabel: string;
    if (isAscii(mapped) && isALabelPrefix(mapped)) {
      // Decoded and held to the U-label rules: an A-label gets a U-label's verdict.
      alabel = mapped;
      const decoded = decodeALabel(alabel, joiners);
      if (typeof decoded !== 'string') return decoded;
      ulabel = decoded;
    } else if (isAscii(mapped)) {
      // An LDH label (or what maps to one, `ＥＸＡＭＰＬＥ`): the ASCII scan checks it.
      alabel = mapped;
    } else {
      const problem = checkULabel(mapped, false, mapped, joiners);
      if (problem !== undefined) return problem;
      alabel = `xn--${punycode.encode(mapped)}`;
    }
    if (alabel.length > MAX_LABEL_OCTETS) return labelTooLong(alabel.length);
    asciiLength += alabel.length + 1;
    if (asciiLength > MAX_DOMAIN_OCTETS + 1) return domainTooLong(asciiLength - 1);
    asciiLabels.push(alabel);
    unicodeLabels.push(ulabel);
    if (!confusable && isMixedScript(ulabel)) confusable = true;
  }
  const ascii = asciiLabels.join('.');
  const bidi = bidiProblem(unicodeLabels);
  if (bidi !== undefined) return bidi;
  return { ok: true, ascii, unicode: unicodeLabels.join('.'), confusable };
}

/**
 * UTS-46 4.1-4.2 for one label: map each code point (tables compiled from tr46), then NFC.
 * PVALID and CONTEXT code points are their own mapping (test/address/idna-data.test.ts), so
 * only the others are looked up. Splitting first is the same as UTS-46's map-then-split:
 * no mapping produces a dot but the three full stops, which split labels already.
 */
function mapLabel(label: string): string | PartFailure {
  if (isAscii(label)) return label.toLowerCase();
  let mapped = '';
  for (let i = 0; i < label.length; i++) {
    const codePoint = label.codePointAt(i) as number;
    if (codePoint > 0xffff) i++;
    if (codePoint < 0x80) {
      mapped += String.fromCharCode(codePoint).toLowerCase();
    } else if ((codePointProperties(codePoint) & DERIVED) !== DISALLOWED) {
      mapped += String.fromCodePoint(codePoint);
    } else {
      mapped += uts46Mapping(codePoint) ?? String.fromCodePoint(codePoint);
    }
    if (mapped.length > MAX_MAPPED_LABEL_UNITS) return labelTooLong(mapped.length);
  }
  return isAscii(mapped) ? mapped : mapped.normalize('NFC');
}

/** Refuses, as written, what the mapping would hide (soft hyphen) or turn into a dot. */
function checkAsWritten(raw: string): PartFailure | undefined {
  let labelCodePoints = 0;
  for (let i = 0; i < raw.length; i++) {
    const code = raw.codePointAt(i) as number;
    if (code > 0xffff) i++;
    if (isDot(code)) {
      labelCodePoints = 0;
      continue;
    }
    if (++labelCodePoints > MAX_RAW_LABEL_CODE_POINTS) return labelTooLong(labelCodePoints);
    if (code < 0x80) {
      if (!isLdhCode(code)) return badCharacter(code);
      continue;
    }
    const properties = codePointProperties(code);
    // ZWNJ and ZWJ are format characters but CONTEXTJ: checkULabel decides on them, as it
    // does on the ones an A-label decodes to.
    if ((properties & UNSAFE) !== 0 && code !== 0x200c && code !== 0x200d) {
      return fail(
        'unsafe_character',
        `The part after the @-sign contains an unsafe character: ${describeCharacter(String.fromCodePoint(code))}.`,
      );
    }
  }
  return undefined;
}

function isALabelPrefix(label: string): boolean {
  return (
    label.length >= 4 &&
    (label.charCodeAt(0) | 0x20) === 0x78 &&
    (label.charCodeAt(1) | 0x20) === 0x6e &&
    label.charCodeAt(2) === 0x2d &&
    label.charCodeAt(3) === 0x2d
  );
}

/** The U-label of a lowercase A-label, held to RFC 5891 5.3-5.5 and the U-label rules. */
function decodeALabel(alabel: string, joiners: boolean): string | PartFailure {
  let ulabel: string;
  try {
    ulabel = punycode.decode(alabel.slice(4));
  } catch {
    return fail('invalid_idn', `The label '${alabel}' is not valid punycode (an invalid A-label).`);
  }
  // An A-label that decodes to nothing or to pure ASCII, that a canonical encoder would write
  // differently, or whose U-label is not NFC, is a forgery of some other label.
  if (
    ulabel.length === 0 ||
    isAscii(ulabel) ||
    `xn--${punycode.encode(ulabel)}` !== alabel ||
    ulabel.normalize('NFC') !== ulabel
  ) {
    return fail('invalid_idn', `The label '${alabel}' is not a valid A-label.`);
  }
  return checkULabel(ulabel, true, alabel, joiners) ?? ulabel;
}

/**
 * The IDNA 2008 rules for one mapped (or decoded) U-label: hyphens, a leading combining mark,
 * the derived property of every code point, and the CONTEXTJ and CONTEXTO rules. The Bidi
 * rule needs the whole domain (bidiProblem). `fromALabel` only changes the error code: an
 * A-label is invalid as a whole. Messages name the label as `shown`: an A-label as written,
 * since what it decodes to may be controls or other characters that do not print.
 * `joiners` false refuses ZWNJ and ZWJ as unsafe characters (see toIdnaDomain), in a U-label
 * and in what an A-label decodes to alike.
 */
export function checkULabel(
  label: string,
  fromALabel: boolean,
  shown: string = label,
  joiners = true,
): PartFailure | undefined {
  const codePoints: number[] = [];
  for (let i = 0; i < label.length; i++) {
    const codePoint = label.codePointAt(i) as number;
    if (codePoint > 0xffff) i++;
    // Each code point is at least one octet of the A-label.
    if (codePoints.push(codePoint) > MAX_LABEL_OCTETS) return labelTooLong(codePoints.length);
  }
  const count = codePoints.length;
  if (count === 0) return undefined;
  if (codePoints[0] === 0x2d || codePoints[count - 1] === 0x2d) {
    return fail('hyphen_position', 'A label of the domain cannot start or end with a hyphen.');
  }
  // RFC 5891 4.2.3.1: "--" in the third and fourth positions is reserved, in U-labels too.
  if (codePoints[2] === 0x2d && codePoints[3] === 0x2d) {
    return fail(
      'invalid_idn',
      `The label '${shown}' has two hyphens in the third and fourth positions, which is reserved.`,
    );
  }
  // RFC 5891 5.4: a label may not start with a combining mark.
  if ((codePointProperties(codePoints[0] as number) & MARK) !== 0) {
    return fail('invalid_idn', `The label '${shown}' starts with a combining mark.`);
  }
  for (let index = 0; index < count; index++) {
    const codePoint = codePoints[index] as number;
    const derived = codePointProperties(codePoint) & DERIVED;
    if (derived === PVALID) continue;
    if (derived === CONTEXTJ) {
      if (!joiners) return unsafeJoiner(codePoint, fromALabel, shown);
      if (contextjAllows(codePoints, index)) continue;
      return fail(
        'invalid_idn',
        `The label '${shown}' has a zero-width ${codePoint === 0x200c ? 'non-joiner' : 'joiner'} where IDNA 2008 does not allow one (RFC 5892 Appendix A.1/A.2).`,
      );
    }
    if (derived === CONTEXTO) {
      if (contextoAllows(codePoints, index)) continue;
      return fail(
        'invalid_idn',
        `The label '${shown}' has ${describeCharacter(String.fromCodePoint(codePoint))} outside the context IDNA 2008 allows it in (RFC 5892 Appendix A).`,
      );
    }
    if (fromALabel) {
      return fail(
        'invalid_idn',
        `The label '${shown}' has a character IDNA 2008 does not allow: ${describeCharacter(String.fromCodePoint(codePoint))}.`,
      );
    }
    return badCharacter(codePoint);
  }
  return undefined;
}

/** RFC 5892 Appendix A.1 (ZWNJ) and A.2 (ZWJ) for the joiner at `index`. */
function contextjAllows(codePoints: readonly number[], index: number): boolean {
  const before = codePoints[index - 1];
  if (before === undefined) return false;
  // After a virama (Canonical_Combining_Class 9), either joiner is allowed.
  if ((codePointProperties(before) & VIRAMA) !== 0) return true;
  if (codePoints[index] !== 0x200c) return false;
  // ZWNJ: (Joining_Type:{L,D})(Joining_Type:T)* ZWNJ (Joining_Type:T)*(Joining_Type:{R,D}).
  // Each scan stops at the first character that is not transparent, so every character is
  // passed over at most twice: linear.
  let left = index - 1;
  while (left >= 0 && joiningType(codePoints[left] as number) === JOINING_T) left--;
  const leftType = left >= 0 ? joiningType(codePoints[left] as number) : JOINING_U;
  if (leftType !== JOINING_L && leftType !== JOINING_D) return false;
  let right = index + 1;
  while (right < codePoints.length && joiningType(codePoints[right] as number) === JOINING_T) {
    right++;
  }
  const rightType =
    right < codePoints.length ? joiningType(codePoints[right] as number) : JOINING_U;
  return rightType === JOINING_R || rightType === JOINING_D;
}

function joiningType(codePoint: number): number {
  return (codePointProperties(codePoint) & JOINING) >> JOINING_SHIFT;
}

/** RFC 5892 Appendix A.3-A.9 for the CONTEXTO code point at `index`. */
function contextoAllows(codePoints: readonly number[], index: number): boolean {
  const codePoint = codePoints[index] as number;
  const before = codePoints[index - 1];
  const after = codePoints[index + 1];
  switch (codePoint) {
    case 0xb7: // A.3 MIDDLE DOT: between two 'l' (Catalan l·l)
      return before === 0x6c && after === 0x6c;
    case 0x375: // A.4 GREEK LOWER NUMERAL SIGN (KERAIA): followed by Greek
      return after !== undefined && (codePointProperties(after) & SCRIPT) === GREEK;
    case 0x5f3: // A.5 HEBREW PUNCTUATION GERESH
    case 0x5f4: // A.6 HEBREW PUNCTUATION GERSHAYIM: preceded by Hebrew
      return before !== undefined && (codePointProperties(before) & SCRIPT) === HEBREW;
    case 0x30fb: // A.7 KATAKANA MIDDLE DOT: the label has Hiragana, Katakana or Han
      return codePoints.some((c) => (codePointProperties(c) & SCRIPT) === JAPANESE);
    default:
      // A.8 ARABIC-INDIC DIGITS and A.9 EXTENDED ARABIC-INDIC DIGITS: never mixed in a label.
      if (codePoint >= 0x660 && codePoint <= 0x669) {
        return !codePoints.some((c) => c >= 0x6f0 && c <= 0x6f9);
      }
      if (codePoint >= 0x6f0 && codePoint <= 0x6f9) {
        return !codePoints.some((c) => c >= 0x660 && c <= 0x669);
      }
      return false;
  }
}

/** Whether one U-label passes the IDNA 2008 rules of checkULabel (joiners and Bidi aside). */
export function isIdna2008Label(label: string): boolean {
  return checkULabel(label, false) === undefined;
}

const bit = (bidiClass: number) => 1 << bidiClass;
// RFC 5893 2, rule 2: what a right-to-left label may hold; rule 5: a left-to-right one.
const RTL_LABEL_CLASSES = [BIDI_R, BIDI_AL, BIDI_AN, BIDI_EN, BIDI_ES, BIDI_CS, BIDI_ET]
  .concat([BIDI_ON, BIDI_BN, BIDI_NSM])
  .reduce((mask, c) => mask | bit(c), 0);
const LTR_LABEL_CLASSES = [BIDI_L, BIDI_EN, BIDI_ES, BIDI_CS, BIDI_ET, BIDI_ON, BIDI_BN]
  .concat([BIDI_NSM])
  .reduce((mask, c) => mask | bit(c), 0);
// Rules 3 and 6: the classes that may end a label, before any nonspacing marks.
const RTL_LABEL_ENDS = bit(BIDI_R) | bit(BIDI_AL) | bit(BIDI_EN) | bit(BIDI_AN);
const LTR_LABEL_ENDS = bit(BIDI_L) | bit(BIDI_EN);

const BIDI_RULES: Readonly<Record<number, string>> = {
  1: 'a label must start with a letter, and a right-to-left label cannot start with a digit',
  2: 'a right-to-left label cannot hold left-to-right letters',
  3: 'a right-to-left label must end with a right-to-left letter or a digit',
  4: 'a right-to-left label cannot mix European and Arabic-Indic digits',
  5: 'a left-to-right label cannot hold right-to-left characters',
  6: 'a left-to-right label must end with a letter or a digit',
};

/**
 * RFC 5893 section 2 (UTS-46 CheckBidi): in a Bidi domain name, one with a label holding an
 * R, AL or AN character (RFC 5893 1.4), every label must satisfy all six rules.
 */
function bidiProblem(labels: readonly string[]): PartFailure | undefined {
  if (!labels.some(hasRightToLeft)) return undefined;
  for (const label of labels) {
    const rule = brokenBidiRule(label);
    if (rule !== 0) {
      return fail(
        'invalid_idn',
        `The label '${label}' breaks the Bidi rule (RFC 5893 2, rule ${rule}): ${BIDI_RULES[rule]}.`,
      );
    }
  }
  return undefined;
}

function hasRightToLeft(label: string): boolean {
  for (let i = 0; i < label.length; i++) {
    if (label.charCodeAt(i) < 0x80) continue;
    if ((codePointProperties(label.codePointAt(i) as number) & RTL) !== 0) return true;
  }
  return false;
}

/** The first of RFC 5893's six rules that the label breaks, or 0. */
function brokenBidiRule(label: string): number {
  if (label.length === 0) return 0; // an empty label is the ASCII scan's to report
  let rightToLeft = false;
  let european = false;
  let arabic = false;
  let last = BIDI_OTHER; // the class of the last character that is not NSM
  for (let i = 0; i < label.length; i++) {
    const codePoint = label.codePointAt(i) as number;
    const bidiClass = (codePointProperties(codePoint) & BIDI) >> BIDI_SHIFT;
    if (i === 0) {
      if (bidiClass === BIDI_R || bidiClass === BIDI_AL) rightToLeft = true;
      else if (bidiClass !== BIDI_L) return 1;
    }
    if (codePoint > 0xffff) i++;
    const allowed = rightToLeft ? RTL_LABEL_CLASSES : LTR_LABEL_CLASSES;
    if ((allowed & bit(bidiClass)) === 0) return rightToLeft ? 2 : 5;
    if (bidiClass === BIDI_EN) european = true;
    else if (bidiClass === BIDI_AN) arabic = true;
    if (bidiClass !== BIDI_NSM) last = bidiClass;
  }
  if (rightToLeft) {
    if ((RTL_LABEL_ENDS & bit(last)) === 0) return 3;
    if (european && arabic) return 4;
  } else if ((LTR_LABEL_ENDS & bit(last)) === 0) {
    return 6;
  }
  return 0;
}

/** A joiner where the policy refuses it: the same code whether written or encoded. */
function unsafeJoiner(codePoint: number, fromALabel: boolean, shown: string): PartFailure {
  const joiner = describeCharacter(String.fromCodePoint(codePoint));
  return fail(
    'unsafe_character',
    fromALabel
      ? `The label '${shown}' encodes an unsafe character: ${joiner}.`
      : `The part after the @-sign contains an unsafe character: ${joiner}.`,
  );
}

function badCharacter(codePoint: number): PartFailure {
  return fail(
    'bad_character',
    `The part after the @-sign contains an invalid character: ${describeCharacter(String.fromCodePoint(codePoint))}.`,
  );
}

function domainTooLong(octets: number): PartFailure {
  return fail(
    'domain_too_long',
    `The part after the @-sign is ${octets - MAX_DOMAIN_OCTETS} octets too long (at most ${MAX_DOMAIN_OCTETS} in its ASCII form).`,
  );
}

function labelTooLong(octets: number): PartFailure {
  return fail(
    'label_too_long',
    `A label of the domain is ${octets - MAX_LABEL_OCTETS} octets too long (at most ${MAX_LABEL_OCTETS}).`,
  );
}
