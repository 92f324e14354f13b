import { PackedDomainSet } from '../checks/packed-domain-set.js';
import { DISPOSABLE_COUNT, DISPOSABLE_PACKED } from './generated/disposable.js';

let disposableDomains: PackedDomainSet | undefined;

/**
 * The merged disposable list (disposable-email-domains, burner-email-providers and
 * mailchecker, less free providers, data/disposable-allow.txt and the typo-squats the typo
 * check corrects), compiled at build time by
 * scripts/compile-lists.mjs. Its lookup table is built on first use: a process that never
 * checks disposability pays only for loading one string.
 */
export function DISPOSABLE_DOMAINS(): PackedDomainSet {
  return (disposableDomains ??= new PackedDomainSet(DISPOSABLE_PACKED, DISPOSABLE_COUNT));
}
