import { FREE_PROVIDER_DOMAINS } from './generated/lists.js';
import { COMPANY_DOMAINS, RANKED_MAIL_DOMAINS } from './generated/typo-lists.js';

export { RANKED_MAIL_DOMAINS };

/**
 * Real domains the typo checker never calls a slip: free providers (data/free-providers.txt)
 * and companies (data/company-domains.txt), besides the ranked mail domains themselves.
 */
export const KNOWN_MAIL_DOMAINS: readonly string[] = [...FREE_PROVIDER_DOMAINS, ...COMPANY_DOMAINS];
