import { createRequire } from 'node:module';
import { DomainSet } from '../checks/domain-set.js';

let disposableDomains: DomainSet | undefined;

/**
 * The disposable-email-domains lists (index and wildcard), loaded on first use: about 120,000
 * domains, which a process that never checks disposability should not pay for at import.
 */
export function DISPOSABLE_DOMAINS(): DomainSet {
  if (disposableDomains === undefined) {
    // createRequire reads the JSON without the experimental-JSON-modules warning of Node 20.
    const require = createRequire(import.meta.url);
    const index = require('disposable-email-domains') as string[];
    const wildcard = require('disposable-email-domains/wildcard.json') as string[];
    disposableDomains = new DomainSet([...index, ...wildcard]);
  }
  return disposableDomains;
}
