/**
 * IDNA 2008 for the domain, one rule set for every label (DESIGN 2.1): a U-label as written and
 * the A-label that encodes it (`xn--...`, decoded and checked again) get the same verdict.
 *
 * - UTS-46 mapping (nontransitional, STD3 rules; tr46's table compiled at build time), after
 *   refusing unsafe characters as written (a soft hyphen would vanish in the mapping).
 * - RFC 5891 5.4 / UTS-46 CheckHyphens: no hyphen at either end, no `--` in positions 3-4.
 * - RFC 5892: every code point PVALID by the derived property (compiled tables, see
 *   code-points.ts), CONTEXTO code points only in their context (Appendix A.3-A.9).
 * - UTS-46 CheckJoiners (CONTEXTJ, RFC 5892 A.1/A.2) and CheckBidi (RFC 5893, all six rules):
 *   tr46's validation of the finished A-label form, whose labels are at most 63 octets, so its
 *   regular expressions run on bounded input; only for a Bidi domain or a label with a joiner,
 *   since tr46's other checks repeat ours.
 *
 * Linear in the domain: one pass of table lookups, label lengths bounded before punycode.
 */
import punycode from 'punycode/punycode.js';
import tr46 from 'tr46';
import {
  codePointProperties,
  CONTEXTJ,
  CONTEXTO,
  DERIVED,
  DISALLOWED,
  GREEK,
  HEBREW,
  JAPANESE,
  MARK,
  PVALID,
  RTL,
  SCRIPT,
  UNSAFE,
  uts46Mapping,
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

// UTS-46 4.2 with every check on: what the A-label form must pass unchanged.
const UTS46_CHECKS = {
  checkHyphens: true,
  checkBidi: true,
  checkJoiners: true,
  useSTD3ASCIIRules: true,
  transitionalProcessing: false,
} as const;

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
 */
export function toIdnaDomain(raw: string): IdnaDomain | PartFailure {
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
      const decoded = decodeALabel(alabel);
      if (typeof decoded !== 'string') return decoded;
      ulabel = decoded;
    } else if (isAscii(mapped)) {
      // An LDH label (or what maps to one, `ＥＸＡＭＰＬＥ`): the ASCII scan checks it.
      alabel = mapped;
    } else {
      const problem = checkULabel(mapped, false);
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
  const unicode = unicodeLabels.join('.');
  // Every other rule tr46 would check, checkULabel and the ASCII scan already have: its
  // CheckBidi and CheckJoiners matter only to a Bidi domain or a label with a joiner.
  if (needsBidiOrJoiners(unicode) && tr46.toASCII(ascii, UTS46_CHECKS) !== ascii) {
    return uts46Failure(ascii);
  }
  return { ok: true, ascii, unicode, confusable };
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

function needsBidiOrJoiners(unicode: string): boolean {
  for (let i = 0; i < unicode.length; i++) {
    if (unicode.charCodeAt(i) < 0x80) continue;
    const properties = codePointProperties(unicode.codePointAt(i) as number);
    if ((properties & RTL) !== 0 || (properties & DERIVED) === CONTEXTJ) return true;
  }
  return false;
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
    // ZWNJ and ZWJ are format characters but CONTEXTJ: the joiner rules decide on them.
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
function decodeALabel(alabel: string): string | PartFailure {
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
  return checkULabel(ulabel, true) ?? ulabel;
}

/**
 * The IDNA 2008 rules for one mapped (or decoded) U-label that UTS-46 leaves out: hyphens,
 * a leading combining mark, the derived property of every code point and the CONTEXTO rules.
 * `fromALabel` only changes the error code: an A-label is invalid as a whole.
 */
export function checkULabel(label: string, fromALabel: boolean): PartFailure | undefined {
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
      `The label '${label}' has two hyphens in the third and fourth positions, which is reserved.`,
    );
  }
  // RFC 5891 5.4: a label may not start with a combining mark.
  if ((codePointProperties(codePoints[0] as number) & MARK) !== 0) {
    return fail('invalid_idn', `The label '${label}' starts with a combining mark.`);
  }
  for (let index = 0; index < count; index++) {
    const codePoint = codePoints[index] as number;
    const derived = codePointProperties(codePoint) & DERIVED;
    if (derived === PVALID || derived === CONTEXTJ) continue; // CONTEXTJ: tr46's CheckJoiners
    if (derived === CONTEXTO) {
      if (contextoAllows(codePoints, index)) continue;
      return fail(
        'invalid_idn',
        `The label '${label}' has ${describeCharacter(String.fromCodePoint(codePoint))} outside the context IDNA 2008 allows it in (RFC 5892 Appendix A).`,
      );
    }
    if (fromALabel) {
      return fail(
        'invalid_idn',
        `The label '${label}' has a character IDNA 2008 does not allow: ${describeCharacter(String.fromCodePoint(codePoint))}.`,
      );
    }
    return badCharacter(codePoint);
  }
  return undefined;
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

/** Names the UTS-46 check that the A-label form failed. */
function uts46Failure(ascii: string): PartFailure {
  if (tr46.toASCII(ascii, { ...UTS46_CHECKS, checkBidi: false }) === ascii) {
    return fail(
      'invalid_idn',
      'The domain breaks the Bidi rule for right-to-left labels (RFC 5893): for example a right-to-left label may not start with a digit or mix in left-to-right letters.',
    );
  }
  if (tr46.toASCII(ascii, { ...UTS46_CHECKS, checkJoiners: false }) === ascii) {
    return fail(
      'invalid_idn',
      'The domain has a zero-width joiner or non-joiner where IDNA 2008 does not allow one (RFC 5892 Appendix A.1/A.2).',
    );
  }
  return notIdn();
}

function notIdn(): PartFailure {
  return fail(
    'invalid_idn',
    'The part after the @-sign is not a valid internationalized domain name.',
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
