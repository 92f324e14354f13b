import { parseDomain } from './domain.js';
import { parseCommonAscii } from './fast-path.js';
import { failure, type ParseFailure } from './errors.js';
import { MAX_ADDRESS_OCTETS, MAX_INPUT_LENGTH } from './limits.js';
import { foldMailboxName, parseLocalPart } from './local-part.js';
import {
  resolveParseOptions,
  type ParseOptions,
  type ProfileName,
  type ResolvedParseOptions,
} from './options.js';
import type { ParsedAddress } from './parsed-address.js';
import { lastIndexOfCode, utf8Length } from './unicode.js';

export type { ParsedAddress };

export type ParseResult = ParsedAddress | ParseFailure;

export interface ParseAddressOptions extends ParseOptions {
  /** `default` (python-email-validator's policy) or `rfc` (the full RFC grammar). */
  readonly profile?: ProfileName;
}

/**
 * Parses and normalizes one email address without any I/O. Never throws for a string: every
 * problem is a `ParseFailure` with a stable `code`. Linear in the input's length, and inputs
 * over 1,024 UTF-16 units are refused at once.
 *
 * @example
 * const parsed = parseAddress('Jöhn.Doe@Bücher.DE');
 * if (parsed.ok) parsed.asciiAddress; // null: the local part needs SMTPUTF8
 * else parsed.code; // e.g. 'consecutive_dots'
 */
export function parseAddress(input: string, options?: ParseAddressOptions): ParseResult {
  if (typeof input !== 'string') {
    throw new TypeError(`parseAddress expects a string, got ${describeType(input)}`);
  }
  const rules = resolveParseOptions(options);
  if (input.length === 0) return failure(input, 'empty', 'The email address is empty.');
  if (input.length > MAX_INPUT_LENGTH) {
    return failure(
      input,
      'too_long',
      `The email address is too long (at most ${MAX_ADDRESS_OCTETS} octets).`,
    );
  }

  return parseCommonAscii(input, rules) ?? parseGeneral(input, rules);
}

/**
 * The full parser, for every shape of address: the source of truth that the ASCII fast path
 * is tested against. Expects a non-empty input within MAX_INPUT_LENGTH.
 */
export function parseGeneral(input: string, rules: ResolvedParseOptions): ParseResult {
  const at = lastIndexOfCode(input, 0x40 /* @ */);
  if (at < 0) return noAtSign(input);
  const first = input.charCodeAt(0);
  const last = input.charCodeAt(input.length - 1);
  if (first === 0x3c /* < */ || last === 0x3e /* > */) {
    return failure(
      input,
      'display_name_not_allowed',
      'A display name and angle brackets around the email address are not allowed.',
    );
  }

  const rawLocal = input.slice(0, at);
  const parsedLocal = parseLocalPart(rawLocal, rules);
  if (!parsedLocal.ok) return failure(input, parsedLocal.code, parsedLocal.message);
  const folded = parsedLocal.ascii ? foldMailboxName(parsedLocal.local) : parsedLocal.local;
  const local = folded === parsedLocal.local ? parsedLocal : { ...parsedLocal, local: folded };
  const rawDomain = input.slice(at + 1);
  const domain = parseDomain(rawDomain, rules);
  if (!domain.ok) return failure(input, domain.code, domain.message);

  // Most addresses are already normal: reuse the input rather than build an equal string.
  // (=== on the very same string objects is a pointer comparison in V8.)
  const unchanged = local.local === rawLocal && domain.unicode === rawDomain;
  const address = unchanged ? input : `${local.local}@${domain.unicode}`;
  const asciiAddress = local.ascii
    ? domain.ascii === domain.unicode
      ? address
      : `${local.local}@${domain.ascii}`
    : null;
  // Every form must fit: the Unicode one travels with SMTPUTF8, the ASCII one without, and
  // the one as written (before NFC) is what the sender's own software will try to use.
  const localOctets = local.ascii ? local.local.length : utf8Length(local.local);
  const unicodeDomainOctets =
    domain.unicode === domain.ascii ? domain.ascii.length : utf8Length(domain.unicode);
  const octets = Math.max(
    localOctets + 1 + Math.max(unicodeDomainOctets, domain.ascii.length),
    address === input ? 0 : utf8Length(input),
  );
  if (octets > MAX_ADDRESS_OCTETS) {
    return failure(
      input,
      'too_long',
      `The email address is ${octets - MAX_ADDRESS_OCTETS} octets too long (at most ${MAX_ADDRESS_OCTETS}).`,
    );
  }
  return {
    ok: true,
    input,
    local: local.local,
    domain: domain.unicode,
    asciiDomain: domain.ascii,
    address,
    asciiAddress,
    smtpUtf8: !local.ascii,
    domainLiteral: domain.literal,
    confusable: local.confusable || domain.confusable,
  };
}

function noAtSign(input: string): ParseFailure {
  // Look-alikes a phone keyboard or a copy from a PDF may have produced.
  if (input.includes('\uff20') || input.includes('\ufe6b')) {
    return failure(
      input,
      'no_at_sign',
      'The email address has a look-alike character (＠ or ﹫) instead of a regular @-sign.',
    );
  }
  return failure(input, 'no_at_sign', 'An email address must have an @-sign.');
}

export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}
