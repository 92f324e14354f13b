import { DOMAIN_CHAR, DOT, HYPHEN, LOWER, specialUseTldAt, UPPER } from './domain.js';
import {
  MAX_ADDRESS_OCTETS,
  MAX_DOMAIN_OCTETS,
  MAX_LABEL_OCTETS,
  MAX_LOCAL_OCTETS,
} from './limits.js';
import { ATEXT, foldMailboxName } from './local-part.js';
import type { ResolvedParseOptions } from './options.js';
import type { ParsedAddress } from './parsed-address.js';

/**
 * The commonest address in one pass and one allocation: an ASCII dot-atom at an ASCII host
 * name without A-labels. Anything else, valid or not, returns undefined and goes to the full
 * parser, which is the source of truth: this path only ever accepts what the full parser
 * accepts (test/property/fast-path.property.test.ts), and reports no errors of its own.
 *
 * bench/: the full parser's separate local, domain and result objects cost about twice this
 * path on ordinary addresses.
 */
export function parseCommonAscii(
  input: string,
  rules: ResolvedParseOptions,
): ParsedAddress | undefined {
  const length = input.length;
  if (length > MAX_ADDRESS_OCTETS) return undefined;
  let i = 0;
  let previousDot = true; // no leading dot
  for (; i < length; i++) {
    const code = input.charCodeAt(i);
    // Lowercase letters first: most characters are, and a range test is cheaper than a table.
    if (code >= 0x61 && code <= 0x7a) {
      previousDot = false;
      continue;
    }
    if (code === 0x40) break;
    if (code === 0x2e) {
      if (previousDot) return undefined;
      previousDot = true;
    } else if (code >= 0x80 || ATEXT[code] !== 1) {
      return undefined;
    } else {
      previousDot = false;
    }
  }
  const at = i;
  if (previousDot || at === length || at > MAX_LOCAL_OCTETS) return undefined;

  const domainStart = at + 1;
  if (length - domainStart > MAX_DOMAIN_OCTETS) return undefined;
  let labelStart = domainStart;
  let tldStart = domainStart;
  let hasUpper = false;
  let lastKind = 0;
  for (i = domainStart; i < length; i++) {
    const code = input.charCodeAt(i);
    if (code >= 0x61 && code <= 0x7a) {
      lastKind = LOWER;
      continue;
    }
    if (code >= 0x80) return undefined;
    const kind = DOMAIN_CHAR[code] as number;
    if (kind === 0) return undefined;
    if (kind === UPPER) hasUpper = true;
    if (kind !== DOT) {
      lastKind = kind;
      continue;
    }
    if (!isPlainLabel(input, labelStart, i, lastKind)) return undefined;
    tldStart = labelStart;
    labelStart = i + 1;
  }
  if (!isPlainLabel(input, labelStart, length, lastKind)) return undefined;
  tldStart = labelStart;

  const asWritten = input.slice(0, at);
  const local = foldMailboxName(asWritten);
  const domain = hasUpper ? input.slice(domainStart).toLowerCase() : input.slice(domainStart);
  if (rules.globallyDeliverable) {
    if (tldStart === domainStart || (lastKind !== LOWER && lastKind !== UPPER)) return undefined;
    if (specialUseTldAt(domain, tldStart - domainStart) !== undefined) return undefined;
  }
  const address = hasUpper || local !== asWritten ? `${local}@${domain}` : input;
  return {
    ok: true,
    input,
    local,
    domain,
    asciiDomain: domain,
    address,
    asciiAddress: address,
    smtpUtf8: false,
    domainLiteral: false,
    confusable: false,
  };
}

/**
 * A label the fast path may take as it is: 1-63 characters, no hyphen at either end, and no
 * "--" in positions 3-4 (an A-label or a reserved R-LDH label, for the full parser).
 * `lastKind` is the kind of the label's last character.
 */
function isPlainLabel(input: string, start: number, end: number, lastKind: number): boolean {
  const length = end - start;
  if (length === 0 || length > MAX_LABEL_OCTETS) return false;
  if (input.charCodeAt(start) === 0x2d || lastKind === HYPHEN) return false;
  return !(
    length >= 4 &&
    input.charCodeAt(start + 2) === 0x2d &&
    input.charCodeAt(start + 3) === 0x2d
  );
}
