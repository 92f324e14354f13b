import { domainToASCII } from 'node:url';
import punycode from 'punycode/punycode.js';
import { describeCharacter, type ParseErrorCode } from './errors.js';
import { isIpv6Literal, parseIpv4 } from './ip-literal.js';
import {
  findUnsafeCharacter,
  isIdna2008Label,
  isLdhCode,
  isMixedScript,
  startsWithCombiningMark,
} from './unicode.js';

/** RFC 1035 2.3.4 and RFC 5321 4.5.3.1.2: octets of the ASCII (A-label) form. */
export const MAX_LABEL_OCTETS = 63;
export const MAX_DOMAIN_OCTETS = 253;

/**
 * Special-use names that never take mail from the internet: RFC 6761 (localhost, test,
 * invalid), RFC 6762 (local), RFC 7686 (onion), RFC 9476 (alt), arpa, and ICANN's `internal`.
 */
const SPECIAL_USE_TLDS: ReadonlySet<string> = new Set([
  'arpa',
  'invalid',
  'local',
  'localhost',
  'onion',
  'test',
  'alt',
  'internal',
]);

// U+3002 IDEOGRAPHIC FULL STOP, U+FF0E FULLWIDTH FULL STOP, U+FF61 HALFWIDTH IDEOGRAPHIC FULL
// STOP: UTS-46 maps each to '.', so a user typing in a CJK input method still gets a dot.
const DOT_VARIANTS: ReadonlySet<string> = new Set(['\u3002', '\uff0e', '\uff61']);
const LETTER_MARK_DIGIT = /[\p{L}\p{M}\p{Nd}]/u;

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

export interface DomainFailure {
  readonly ok: false;
  readonly code: ParseErrorCode;
  readonly message: string;
}

export interface DomainRules {
  readonly allowDomainLiteral: boolean;
  readonly globallyDeliverable: boolean;
}

function fail(code: ParseErrorCode, message: string): DomainFailure {
  return { ok: false, code, message };
}

/** Parses and normalizes the part after the @-sign. Linear in its length. */
export function parseDomain(raw: string, rules: DomainRules): ParsedDomain | DomainFailure {
  if (raw.length === 0) return fail('empty_domain', 'There must be something after the @-sign.');
  if (raw.charCodeAt(0) === 0x5b /* [ */) return parseDomainLiteral(raw, rules);

  let ascii: string;
  let hasNonAscii = false;
  for (let i = 0; i < raw.length; i++) {
    const code = raw.charCodeAt(i);
    if (code >= 0x80) {
      hasNonAscii = true;
      break;
    }
    if (code !== 0x2e && !isLdhCode(code)) {
      return fail(
        'bad_character',
        `The part after the @-sign contains an invalid character: ${describeCharacter(raw[i] as string)}.`,
      );
    }
  }
  if (hasNonAscii) {
    const mapped = mapInternationalDomain(raw);
    if (!mapped.ok) return mapped;
    ascii = mapped.ascii;
  } else {
    ascii = raw.toLowerCase();
  }
  return checkLabels(ascii, rules);
}

/** UTS-46 mapping to A-labels, after refusing what the mapping would hide or let through. */
function mapInternationalDomain(raw: string): { ok: true; ascii: string } | DomainFailure {
  const unsafe = findUnsafeCharacter(raw);
  if (unsafe !== undefined) {
    return fail(
      'unsafe_character',
      `The part after the @-sign contains an unsafe character: ${describeCharacter(unsafe)}.`,
    );
  }
  for (const char of raw) {
    const code = char.charCodeAt(0);
    if (code < 0x80) {
      if (code !== 0x2e && !isLdhCode(code)) {
        return fail('bad_character', `The part after the @-sign contains an invalid character: ${describeCharacter(char)}.`);
      }
      continue;
    }
    if (DOT_VARIANTS.has(char) || LETTER_MARK_DIGIT.test(char)) continue;
    // Fullwidth hyphen and the like are compatibility forms of an LDH character; anything
    // else (symbols, '⒈' which would map to "1.") is refused as written.
    const compatible = char.normalize('NFKC');
    if (compatible.length === 1 && isLdhCode(compatible.charCodeAt(0))) continue;
    return fail(
      'bad_character',
      `The part after the @-sign contains an invalid character: '${char}'.`,
    );
  }
  const ascii = domainToASCII(raw);
  if (ascii === '') {
    return fail('invalid_idn', 'The part after the @-sign is not a valid internationalized domain name.');
  }
  return { ok: true, ascii };
}

/** The structural rules every label obeys, checked on the A-label form. */
function checkLabels(ascii: string, rules: DomainRules): ParsedDomain | DomainFailure {
  const labels = ascii.split('.');
  let unicodeLabels: string[] | undefined;
  let confusable = false;
  for (let index = 0; index < labels.length; index++) {
    const label = labels[index] as string;
    if (label.length === 0) {
      if (index === 0) return fail('leading_dot', 'The part after the @-sign cannot start with a period.');
      if (index === labels.length - 1) return fail('trailing_dot', 'An email address cannot end with a period.');
      return fail('consecutive_dots', 'The part after the @-sign cannot have two periods in a row.');
    }
    if (label.length > MAX_LABEL_OCTETS) {
      return fail('label_too_long', `A label of the domain is ${label.length - MAX_LABEL_OCTETS} octets too long (at most ${MAX_LABEL_OCTETS}).`);
    }
    if (label.charCodeAt(0) === 0x2d || label.charCodeAt(label.length - 1) === 0x2d) {
      return fail('hyphen_position', 'A label of the domain cannot start or end with a hyphen.');
    }
    if (label.length >= 4 && label.charCodeAt(2) === 0x2d && label.charCodeAt(3) === 0x2d) {
      // RFC 5891 4.2.3.1: "--" in the third and fourth positions is reserved (R-LDH); only
      // xn-- (punycode) is in use.
      if (!label.startsWith('xn--')) {
        return fail('invalid_idn', `The label '${label}' has two hyphens in the third and fourth positions, which is reserved for punycode.`);
      }
      const ulabel = decodeALabel(label);
      if (ulabel === undefined) {
        return fail('invalid_idn', `The label '${label}' is not valid punycode (an invalid A-label).`);
      }
      unicodeLabels ??= labels.slice(0, index);
      unicodeLabels.push(ulabel);
      if (!confusable && isMixedScript(ulabel)) confusable = true;
      continue;
    }
    unicodeLabels?.push(label);
  }
  if (ascii.length > MAX_DOMAIN_OCTETS) {
    return fail('domain_too_long', `The part after the @-sign is ${ascii.length - MAX_DOMAIN_OCTETS} octets too long (at most ${MAX_DOMAIN_OCTETS} in its ASCII form).`);
  }
  if (rules.globallyDeliverable) {
    const tld = labels[labels.length - 1] as string;
    if (labels.length < 2) {
      return fail('domain_needs_dot', 'The part after the @-sign is not valid. It should have a period.');
    }
    const last = tld.charCodeAt(tld.length - 1);
    if (!((last >= 0x61 && last <= 0x7a))) {
      return fail('invalid_tld', 'The part after the @-sign is not within a valid top-level domain.');
    }
    if (SPECIAL_USE_TLDS.has(tld)) {
      return fail('special_use_domain', `The domain is under '.${tld}', a special-use name that cannot receive email.`);
    }
  }
  return {
    ok: true,
    ascii,
    unicode: unicodeLabels === undefined ? ascii : unicodeLabels.join('.'),
    literal: false,
    confusable,
  };
}

/** The U-label of a valid A-label, or undefined (RFC 5891 5.3-5.5). */
function decodeALabel(label: string): string | undefined {
  let ulabel: string;
  try {
    ulabel = punycode.decode(label.slice(4));
  } catch {
    return undefined;
  }
  if (ulabel.length === 0) return undefined;
  if (ulabel !== ulabel.normalize('NFC')) return undefined;
  if (startsWithCombiningMark(ulabel)) return undefined;
  if (ulabel.startsWith('-') || ulabel.endsWith('-')) return undefined;
  // An A-label that decodes to pure ASCII, or that a canonical encoder would write
  // differently, is a forgery of some other label.
  let hasNonAscii = false;
  for (let i = 0; i < ulabel.length; i++) if (ulabel.charCodeAt(i) >= 0x80) hasNonAscii = true;
  if (!hasNonAscii) return undefined;
  if (!isIdna2008Label(ulabel)) return undefined;
  if (`xn--${punycode.encode(ulabel)}` !== label) return undefined;
  return ulabel;
}

function parseDomainLiteral(raw: string, rules: DomainRules): ParsedDomain | DomainFailure {
  if (!rules.allowDomainLiteral) {
    return fail('domain_literal_not_allowed', 'A bracketed IP address after the @-sign is not allowed here.');
  }
  if (raw.charCodeAt(raw.length - 1) !== 0x5d /* ] */ || raw.length < 3) {
    return fail('invalid_domain_literal', 'The bracketed address after the @-sign is not closed.');
  }
  const body = raw.slice(1, -1);
  let canonical: string | undefined;
  if (body.length > 5 && body.slice(0, 5).toLowerCase() === 'ipv6:') {
    const address = body.slice(5);
    canonical = isIpv6Literal(address) ? `IPv6:${address.toLowerCase()}` : undefined;
  } else {
    canonical = parseIpv4(body);
  }
  if (canonical === undefined) {
    return fail('invalid_domain_literal', 'The bracketed address after the @-sign is not a valid IPv4 address or IPv6: address literal.');
  }
  const literal = `[${canonical}]`;
  return { ok: true, ascii: literal, unicode: literal, literal: true, confusable: false };
}
