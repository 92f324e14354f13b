import { describeCharacter, partFailure as fail, type PartFailure } from './errors.js';
import { toIdnaDomain } from './idna.js';
import { canonicalIpv6, parseIpv4 } from './ip-literal.js';
import { MAX_DOMAIN_OCTETS, MAX_LABEL_OCTETS } from './limits.js';
import { boundedMemo } from './memo.js';

/**
 * Special-use names that never take mail from the internet: RFC 6761 (localhost, test,
 * invalid), RFC 6762 (local), RFC 7686 (onion), RFC 9476 (alt), arpa, and ICANN's `internal`.
 */
export const SPECIAL_USE_TLDS: ReadonlySet<string> = new Set([
  'arpa',
  'invalid',
  'local',
  'localhost',
  'onion',
  'test',
  'alt',
  'internal',
]);

// Lengths and first letters of the names above, as bits: most TLDs (com, net, de) differ in
// one of the two, so the check needs no slice of the domain and no hash.
const SPECIAL_USE_SHAPES = new Uint8Array(16 * 128);
for (const tld of SPECIAL_USE_TLDS) SPECIAL_USE_SHAPES[shapeOf(tld, 0)] = 1;

function shapeOf(domain: string, start: number): number {
  const length = domain.length - start;
  return length < 16 ? length * 128 + (domain.charCodeAt(start) & 0x7f) : 0;
}

/** The special-use TLD that a lowercase ASCII domain's last label (from `start`) is, if any. */
export function specialUseTldAt(domain: string, start: number): string | undefined {
  if (SPECIAL_USE_SHAPES[shapeOf(domain, start)] !== 1) return undefined;
  const tld = domain.slice(start);
  return SPECIAL_USE_TLDS.has(tld) ? tld : undefined;
}

export interface ParsedDomain {
  readonly ok: true;
  /** Lowercase Unicode form (U-labels), for display and the normalized address. */
  readonly unicode: string;
  /** Lowercase A-label form, for DNS, SMTP and every lookup. */
  readonly ascii: string;
  readonly literal: boolean;
  /** A label mixes scripts the way homograph attacks do. */
  readonly confusable: boolean;
}

export interface DomainRules {
  readonly allowDomainLiteral: boolean;
  readonly globallyDeliverable: boolean;
  /** ZWNJ and ZWJ where IDNA 2008's CONTEXTJ allows them; absent, IDNA 2008 alone decides. */
  readonly allowDomainJoiners?: boolean;
}

/** Parses and normalizes the part after the @-sign. Linear in its length. */
export function parseDomain(raw: string, rules: DomainRules): ParsedDomain | PartFailure {
  if (raw.length === 0) return fail('empty_domain', 'There must be something after the @-sign.');
  if (raw.charCodeAt(0) === 0x5b /* [ */) return parseDomainLiteral(raw, rules);
  const scanned = scanDomain(raw, rules);
  if (scanned !== NON_ASCII) return scanned;
  return parseInternational[ruleSet(rules)]!(raw);
}

/** The rules that change an international domain's verdict, as an index of the memos below. */
function ruleSet(rules: DomainRules): number {
  return (rules.globallyDeliverable ? 1 : 0) + (rules.allowDomainJoiners === false ? 0 : 2);
}

// IDNA 2008 (mapping, punycode, the label rules) costs several µs a domain: memoized per rule
// set. It runs only for non-ASCII domains and A-labels; ASCII host names never get here.
const parseInternational = [0, 1, 2, 3].map((set) =>
  boundedMemo((raw) =>
    parseInternationalDomain(raw, {
      allowDomainLiteral: false,
      globallyDeliverable: (set & 1) !== 0,
      allowDomainJoiners: (set & 2) !== 0,
    }),
  ),
);

function parseInternationalDomain(raw: string, rules: DomainRules): ParsedDomain | PartFailure {
  const idn = toIdnaDomain(raw, rules.allowDomainJoiners !== false);
  if (!idn.ok) return idn;
  // Lengths of the A-label form and the deliverability rules, without decoding again.
  const checked = scanDomain(idn.ascii, rules, false);
  if (checked === NON_ASCII) return fail('invalid_idn', 'The domain did not map to ASCII.');
  if (!checked.ok) return checked;
  return { ...checked, unicode: idn.unicode, confusable: idn.confusable };
}

// One table lookup per character: bench/ measured a separate LDH pass, toLowerCase and
// split('.') at about 3x the cost of this single scan on ordinary domains.
export const LOWER = 1;
export const UPPER = 2;
export const DIGIT = 3;
export const HYPHEN = 4;
export const DOT = 5;
/** The kind of each ASCII character in a host name; 0 for any character not allowed. */
export const DOMAIN_CHAR = new Uint8Array(128);
for (let code = 0x61; code <= 0x7a; code++) DOMAIN_CHAR[code] = LOWER;
for (let code = 0x41; code <= 0x5a; code++) DOMAIN_CHAR[code] = UPPER;
for (let code = 0x30; code <= 0x39; code++) DOMAIN_CHAR[code] = DIGIT;
DOMAIN_CHAR[0x2d] = HYPHEN;
DOMAIN_CHAR[0x2e] = DOT;

const NON_ASCII = Symbol('non-ascii');

/**
 * Checks an ASCII domain in one pass: LDH characters, label lengths, hyphen positions,
 * R-LDH labels, total length and the deliverability rules; with `decode`, A-labels are
 * decoded and held to the same IDNA 2008 rules as U-labels.
 * Returns NON_ASCII at the first non-ASCII character, which needs UTS-46 mapping first.
 */
function scanDomain(
  text: string,
  rules: DomainRules,
  decode = true,
): ParsedDomain | PartFailure | typeof NON_ASCII {
  let labelStart = 0;
  let tldStart = 0;
  let hasUpper = false;
  let hasALabel = false;
  let lastKind = 0;
  const length = text.length;
  for (let i = 0; i <= length; i++) {
    if (i < length) {
      const code = text.charCodeAt(i);
      if (code >= 0x80) return NON_ASCII;
      const kind = DOMAIN_CHAR[code] as number;
      if (kind === 0) {
        return fail(
          'bad_character',
          `The part after the @-sign contains an invalid character: ${describeCharacter(text[i] as string)}.`,
        );
      }
      if (kind === UPPER) hasUpper = true;
      if (kind !== DOT) {
        lastKind = kind;
        continue;
      }
    }
    const labelLength = i - labelStart;
    if (labelLength === 0) {
      if (labelStart === 0)
        return fail('leading_dot', 'The part after the @-sign cannot start with a period.');
      if (i === length) return fail('trailing_dot', 'An email address cannot end with a period.');
      return fail(
        'consecutive_dots',
        'The part after the @-sign cannot have two periods in a row.',
      );
    }
    if (labelLength > MAX_LABEL_OCTETS) {
      return fail(
        'label_too_long',
        `A label of the domain is ${labelLength - MAX_LABEL_OCTETS} octets too long (at most ${MAX_LABEL_OCTETS}).`,
      );
    }
    if (text.charCodeAt(labelStart) === 0x2d || lastKind === HYPHEN) {
      return fail('hyphen_position', 'A label of the domain cannot start or end with a hyphen.');
    }
    // RFC 5891 4.2.3.1: "--" in the third and fourth positions is reserved (R-LDH); only
    // xn-- (punycode) is in use, and those labels are decoded below.
    if (
      labelLength >= 4 &&
      text.charCodeAt(labelStart + 2) === 0x2d &&
      text.charCodeAt(labelStart + 3) === 0x2d
    ) {
      if (
        (text.charCodeAt(labelStart) | 0x20) !== 0x78 ||
        (text.charCodeAt(labelStart + 1) | 0x20) !== 0x6e
      ) {
        return fail(
          'invalid_idn',
          `The label '${text.slice(labelStart, i)}' has two hyphens in the third and fourth positions, which is reserved for punycode.`,
        );
      }
      hasALabel = true;
    }
    tldStart = labelStart;
    labelStart = i + 1;
  }
  if (length > MAX_DOMAIN_OCTETS) {
    return fail(
      'domain_too_long',
      `The part after the @-sign is ${length - MAX_DOMAIN_OCTETS} octets too long (at most ${MAX_DOMAIN_OCTETS} in its ASCII form).`,
    );
  }
  const ascii = hasUpper ? text.toLowerCase() : text;
  if (rules.globallyDeliverable) {
    if (tldStart === 0) {
      return fail(
        'domain_needs_dot',
        'The part after the @-sign is not valid. It should have a period.',
      );
    }
    if (lastKind !== LOWER && lastKind !== UPPER) {
      return fail(
        'invalid_tld',
        'The part after the @-sign is not within a valid top-level domain.',
      );
    }
    const tld = specialUseTldAt(ascii, tldStart);
    if (tld !== undefined) {
      return fail(
        'special_use_domain',
        `The domain is under '.${tld}', a special-use name that cannot receive email.`,
      );
    }
  }
  if (!hasALabel || !decode) {
    return { ok: true, ascii, unicode: ascii, literal: false, confusable: false };
  }
  return (rules.allowDomainJoiners === false ? checkALabelsNoJoiners : checkALabels)(ascii);
}

/** An ASCII domain with A-labels, through the one IDNA rule set; memoized (~µs a domain). */
function aLabelChecker(joiners: boolean): (ascii: string) => ParsedDomain | PartFailure {
  return boundedMemo((ascii) => {
    const idn = toIdnaDomain(ascii, joiners);
    if (!idn.ok) return idn;
    return { ok: true, ascii, unicode: idn.unicode, literal: false, confusable: idn.confusable };
  });
}
const checkALabels = aLabelChecker(true);
const checkALabelsNoJoiners = aLabelChecker(false);

function parseDomainLiteral(raw: string, rules: DomainRules): ParsedDomain | PartFailure {
  if (!rules.allowDomainLiteral) {
    return fail(
      'domain_literal_not_allowed',
      'A bracketed IP address after the @-sign is not allowed here.',
    );
  }
  if (raw.charCodeAt(raw.length - 1) !== 0x5d /* ] */ || raw.length < 3) {
    return fail('invalid_domain_literal', 'The bracketed address after the @-sign is not closed.');
  }
  const body = raw.slice(1, -1);
  let canonical: string | undefined;
  if (body.length > 5 && body.slice(0, 5).toLowerCase() === 'ipv6:') {
    const address = canonicalIpv6(body.slice(5));
    canonical = address === undefined ? undefined : `IPv6:${address}`;
  } else {
    canonical = parseIpv4(body);
  }
  if (canonical === undefined) {
    return fail(
      'invalid_domain_literal',
      'The bracketed address after the @-sign is not a valid IPv4 address or IPv6: address literal.',
    );
  }
  const literal = `[${canonical}]`;
  return { ok: true, ascii: literal, unicode: literal, literal: true, confusable: false };
}
