import punycode from 'punycode/punycode.js';
import { DISPOSABLE_DOMAINS } from '../data/disposable.js';
import { pass, risky, type Checker } from './checker.js';
import { DomainSet } from './domain-set.js';
import type { DomainLookup } from './packed-domain-set.js';
import { defaultSuggester } from './typo.js';

/** Options of the disposable checker. */
export interface DisposableOptions {
  /** The list to check against. Default: the merged list compiled at build time. */
  readonly list?: DomainLookup;
  /**
   * Your own false positives: these domains, and their subdomains, are never disposable,
   * whatever the list says. Unicode domains are taken as their A-labels.
   */
  readonly allow?: Iterable<string>;
  /**
   * The typo check's suggester: a listed domain it corrects is a slip of a well-known mail
   * domain, never a throwaway (see disposable). Default: the default typo check's.
   */
  readonly typo?: (domain: string) => string | null;
}

/**
 * Flags a domain, or any parent of it, that hands out throwaway mailboxes.
 *
 * A typo is a typo first: burner lists hold typo-squats of the big providers (`gmial.com`,
 * `hotmal.com`), and a signup form told "disposable" refuses a throwaway where it should ask
 * "did you mean gmail.com?". So a domain the typo check corrects is never disposable,
 * whatever the list: when the typo check ran (standard, smtp) its answer (`didYouMean`)
 * decides; otherwise (quick) the typo check's suggester is asked, on a hit only. The
 * maintained list is compiled without the domains the default suggester corrects
 * (scripts/compile-lists.mjs applies this same rule ahead of time).
 *
 * @example
 * // A domain of yours that a maintained list names by mistake, without replacing the list:
 * createEngine({ checkers: { disposable: disposable({ allow: ['example-relay.com'] }) } });
 */
export function disposable(options: DisposableOptions | DomainLookup = {}): Checker {
  const given: DisposableOptions = isLookup(options) ? { list: options } : options;
  const { list = DISPOSABLE_DOMAINS(), allow } = given;
  const corrects = given.typo ?? ((domain: string) => defaultSuggester()(domain));
  // The maintained list names no domain the default suggester corrects (the build applied
  // this rule): a hit on a listed domain itself needs no question, so quick verifications pay
  // nothing for it. A hit through a listed parent (`hotmail.xo.uk` under `xo.uk`) does; a
  // domain of two labels can only hit itself, since the list names no TLD.
  const prefiltered = given.list === undefined && given.typo === undefined;
  const allowed = allow === undefined ? undefined : new DomainSet(allowedDomains(allow));
  const isDisposable = risky('disposable', 'disposable_domain', 'disposable');
  const notDisposable = pass('disposable');
  return {
    name: 'disposable',
    run({ parsed, didYouMean }) {
      const domain = parsed.asciiDomain;
      // x.mailinator.com is as throwaway as mailinator.com: walk the parents.
      if (!list.hasSelfOrParent(domain)) return notDisposable;
      if (allowed?.hasSelfOrParent(domain) === true) return notDisposable;
      if (didYouMean !== undefined) return notDisposable;
      if (prefiltered && (domain.indexOf('.') === domain.lastIndexOf('.') || list.has(domain))) {
        return isDisposable;
      }
      return corrects(domain) === null ? isDisposable : notDisposable;
    },
  };
}

function isLookup(options: DisposableOptions | DomainLookup): options is DomainLookup {
  return typeof (options as DomainLookup).hasSelfOrParent === 'function';
}

function* allowedDomains(domains: Iterable<string>): Iterable<string> {
  for (const domain of domains) {
    yield punycode.toASCII(domain.trim().toLowerCase().normalize('NFC').replace(/\.$/, ''));
  }
}
