import type { Engine } from '../engine/engine.js';
import type { Clock } from '../ports/clock.js';
import type { AccountRecord, Store } from '../ports/store.js';
import { randomBase62, type RandomBytes } from './api-keys.js';
import type { RateLimits } from './rate-limits.js';
import { ServiceError } from './service-error.js';
import { requireText } from './validate.js';

/** What every capability of the service works over: one of each, shared (DESIGN 1). */
export interface ServiceContext {
  readonly engine: Engine;
  readonly store: Store;
  readonly clock: Clock;
  readonly random: RandomBytes;
  readonly rateLimits: RateLimits;
  /** A fresh id such as `acct_…`: the prefix, then 24 random base62 characters. */
  newId(prefix: string): string;
}

export function createContext(parts: Omit<ServiceContext, 'newId'>): ServiceContext {
  return { ...parts, newId: (prefix) => `${prefix}_${randomBase62(24, parts.random)}` };
}

/** The account `accountId` names, or `not_found`. */
export async function accountOf(ctx: ServiceContext, accountId: unknown): Promise<AccountRecord> {
  const id = requireText(accountId, 'account_id');
  const account = await ctx.store.getAccount(id);
  if (account === undefined) throw new ServiceError('not_found', `No account ${id}.`);
  return account;
}
