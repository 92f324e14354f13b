import { DomainSet } from '../checks/domain-set.js';
import { FREE_PROVIDER_DOMAINS, NO_REPLY_NAMES, ROLE_NAMES } from './generated/lists.js';

/** Role local parts from data/role.txt. */
export const DEFAULT_ROLE_NAMES: ReadonlySet<string> = new Set(ROLE_NAMES);
/** Free mailbox providers from data/free-providers.txt. */
export const DEFAULT_FREE_PROVIDERS: DomainSet = new DomainSet(FREE_PROVIDER_DOMAINS);
/** No-reply names from data/no-reply.txt, separators removed. */
export const DEFAULT_NO_REPLY_NAMES: readonly string[] = NO_REPLY_NAMES;
