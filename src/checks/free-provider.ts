import { DEFAULT_FREE_PROVIDERS } from '../data/lists.js';
import { pass, risky, type Checker } from './checker.js';
import type { DomainSet } from './domain-set.js';

/**
 * Flags mailboxes at free providers (gmail.com, outlook.com, ...): personal, not business.
 * A subdomain counts too: ISPs' consumer mail lives under regional ones (nc.rr.com).
 */
export function freeProvider(list: DomainSet = DEFAULT_FREE_PROVIDERS): Checker {
  const isFree = risky('free_provider', 'free_provider', 'free');
  const notFree = pass('free_provider');
  return {
    name: 'free_provider',
    run({ parsed }) {
      return list.hasSelfOrParent(parsed.asciiDomain) ? isFree : notFree;
    },
  };
}
