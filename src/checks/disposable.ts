import punycode from 'punycode/punycode.js';
import { DISPOSABLE_DOMAINS } from '../data/disposable.js';
import { pass, risky, type Checker } from './checker.js';
import { DomainSet } from './domain-set.js';
import type { DomainLookup } from './packed-domain-set.js';

/** Options of the disposable checker. */
export interface DisposableOptions {
  /** The list to check against. Default: the merged list compiled at build time. */
  readonly list?: DomainLookup;
  /**
   * Your own false positives: these domains, and their subdomains, are never disposable,
   * whatever the list says. Unicode domains are taken as their A-labels.
   */
  readonly allow?: Iterable<string>;
}

/**
 * Flags a domain, or any parent of it, that hands out throwaway mailboxes.
 *
 * @example
 * // A domain of yours that a maintained list names by mistake, without replacing the list:
 * createEngine({ checkers: { disposable: disposable({ allow: ['example-relay.com'] }) } });
 */
export function disposable(options: DisposableOptions | DomainLookup = {}): Checker {
  const { list = DISPOSABLE_DOMAINS(), allow } = isLookup(options) ? { list: options } : options;
  const allowed = allow === undefined ? undefined : new DomainSet(allowedDomains(allow));
  const isDisposable = risky('disposable', 'disposable_domain', 'disposable');
  const notDisposable = pass('disposable');
  return {
    name: 'disposable',
    run({ parsed }) {
      const domain = parsed.asciiDomain;
      // x.mailinator.com is as throwaway as mailinator.com: walk the parents.
      if (!list.hasSelfOrParent(domain)) return notDisposable;
      return allowed?.hasSelfOrParent(domain) === true ? notDisposable : isDisposable;
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
