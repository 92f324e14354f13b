import { DISPOSABLE_DOMAINS } from '../data/disposable.js';
import { pass, risky, type Checker } from './checker.js';
import type { DomainSet } from './domain-set.js';

/** Flags a domain, or any parent of it, that hands out throwaway mailboxes. */
export function disposable(list: DomainSet = DISPOSABLE_DOMAINS()): Checker {
  const isDisposable = risky('disposable', 'disposable_domain', 'disposable');
  const notDisposable = pass('disposable');
  return {
    name: 'disposable',
    run({ parsed }) {
      // x.mailinator.com is as throwaway as mailinator.com: walk the parents.
      return list.hasSelfOrParent(parsed.asciiDomain) ? isDisposable : notDisposable;
    },
  };
}
