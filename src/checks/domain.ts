import { parse } from 'tldts';
import { boundedMemo } from '../address/memo.js';
import { lastIndexOfCode } from '../address/unicode.js';
import { fail, pass, skipped, type Checker } from './checker.js';

export type TldLookup = (tld: string) => boolean;

// A TLD is known when the public suffix list's ICANN section has it. tldts answers in about
// a microsecond; the memo makes a repeated TLD a Map read. Bounded: made-up TLDs are unbounded.

/** Answers from tldts's copy of the public suffix list, ICANN section only. */
export function icannTldLookup(): TldLookup {
  return boundedMemo(
    (tld) => parse(tld, { allowPrivateDomains: false, extractHostname: false }).isIcann === true,
  );
}

/**
 * Decides offline whether the top-level domain exists, so a made-up TLD
 * (`user@example.notarealtld`) is an invalid domain without a DNS query.
 */
export function domain(isKnownTld: TldLookup = icannTldLookup()): Checker {
  const literal = skipped('domain', 'domain_literal');
  const known = pass('domain');
  const unknownTld = fail('domain', 'unknown_tld');
  return {
    name: 'domain',
    run({ parsed }) {
      if (parsed.domainLiteral) return literal;
      const domain = parsed.asciiDomain;
      const dot = lastIndexOfCode(domain, 0x2e /* . */);
      return isKnownTld(dot < 0 ? domain : domain.slice(dot + 1)) ? known : unknownTld;
    },
  };
}
