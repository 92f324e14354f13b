import type { Engine } from '../engine/engine.js';
import type { Clock } from '../ports/clock.js';
import type { Logger } from '../ports/logger.js';
import type { Observer } from '../ports/observer.js';
import type { AccountRecord, Store } from '../ports/store.js';
import { randomBase62, type RandomBytes } from './api-keys.js';
import { createKeyCache, type KeyCache } from './key-cache.js';
import { SERVICE_REF_PREFIX } from '../store/rules/ledger.js';
import type { RateLimits } from './rate-limits.js';
import { ServiceError } from './service-error.js';
import { requireText } from './validate.js';

/** What every capability of the service works over: one of each, shared, its ports resolved. */
export interface ServiceContext {
  readonly engine: Engine;
  readonly store: Store;
  readonly clock: Clock;
  readonly random: RandomBytes;
  readonly rateLimits: RateLimits;
  /** Told of batch progress and webhook attempts (metrics); none by default. */
  readonly observer: Observer | undefined;
  /** Where job changes, webhook attempts and store errors are told: silentLogger by default. */
  readonly logger: Logger;
  /** Keys authenticate found, by hash; cleared by every change to a key or an account. */
  readonly keyCache: KeyCache;
  /** A fresh id such as `acct_…`: the prefix, then 24 random base62 characters. */
  newId(prefix: string): string;
  /**
   * A fresh reference of the service's own namespace (SERVICE_REF_PREFIX), such as
   * `mv:verify:<instance>.<n>`: no caller may file one, and no two service instances share
   * one (each draws 16 random base62 characters at start, then counts; a reference per verify
   * from the CSPRNG cost more than the rest of the ledger's work in memory).
   */
  serviceRef(kind: string): string;
}

export function createContext(
  parts: Omit<ServiceContext, 'newId' | 'serviceRef' | 'keyCache'>,
): ServiceContext {
  const instance = randomBase62(16, parts.random);
  let count = 0;
  return {
    ...parts,
    keyCache: createKeyCache(parts.clock),
    newId: (prefix) => `${prefix}_${randomBase62(24, parts.random)}`,
    serviceRef: (kind) => `${SERVICE_REF_PREFIX}${kind}:${instance}.${(count++).toString(36)}`,
  };
}

/** The account `accountId` names, or `not_found`. */
export async function accountOf(ctx: ServiceContext, accountId: unknown): Promise<AccountRecord> {
  const id = requireText(accountId, 'account_id');
  const account = await ctx.store.getAccount(id);
  if (account === undefined) throw new ServiceError('not_found', `No account ${id}.`);
  return account;
}
