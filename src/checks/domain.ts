import { lastIndexOfCode } from '../address/unicode.js';
import { ICANN_TLDS } from '../data/generated/tlds.js';
import { fail, pass, skipped, type Checker } from './checker.js';

export type TldLookup = (tld: string) => boolean;

let icann: ReadonlySet<string> | undefined;

/**
 * Answers from the ICANN section of the public suffix list, its top-level labels compiled
 * from tldts's copy at build time (scripts/compile-tlds.mjs; a test holds them against
 * tldts). A Set read, with no tldts at run time: loading its CommonJS bundle cost 52-92 ms
 * of start-up (bench/: the cold-start row), for about 1,600 names.
 */
export function icannTldLookup(): TldLookup {
  return (tld) => (icann ??= new Set(ICANN_TLDS.split(' '))).has(tld);
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
