import type { Store, WindowCount } from '../ports/store.js';
import { PUBLIC_KEY_DAILY_LIMIT, type Plan } from './plans.js';
import { ServiceError } from './service-error.js';

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

/** What the HTTP layer puts in X-RateLimit-Limit, -Remaining and -Reset (DESIGN 5.2). */
export interface RateLimitStatus {
  /** The per-minute limit of the key's plan. */
  readonly limit: number;
  readonly remaining: number;
  /** Epoch milliseconds when the minute window ends. */
  readonly resetAt: number;
}

/** The per-key minute and day windows, and the per-end-user day window of public keys. */
export interface RateLimits {
  /**
   * Counts one request of a key; throws `rate_limit_exceeded` (with `retry_after` in seconds
   * and the status for the headers) when a window is over its limit. `endUser` is the client
   * key of a public key's caller, limited to 10 a day.
   */
  admit(keyId: string, plan: Plan, endUser?: string): Promise<RateLimitStatus>;
  /** The minute window's figures without counting a request. */
  status(keyId: string, plan: Plan): Promise<RateLimitStatus>;
}

/**
 * Rate limits on the store's counters (rate-limiter-flexible underneath). Windows are fixed,
 * starting at a key's first request in them. The minute window is counted first and a request
 * it refuses is not counted against the day, so a client hammering through its 429s does not
 * burn its daily quota; requests refused by the day limit still count in their minute.
 */
export function createRateLimits(
  store: Store,
  publicDailyLimit = PUBLIC_KEY_DAILY_LIMIT,
): RateLimits {
  const perMinute = store.rateCounter('key_minute', MINUTE_MS);
  const perDay = store.rateCounter('key_day', DAY_MS);
  const perEndUser = store.rateCounter('public_end_user_day', DAY_MS);

  return {
    async admit(keyId, plan, endUser) {
      const minute = await perMinute.hit(keyId);
      const status = statusOf(plan, minute);
      if (minute.count > plan.perMinute)
        throw exceeded(`${plan.perMinute} requests a minute`, minute, status);
      const day = await perDay.hit(keyId);
      if (day.count > plan.perDay) throw exceeded(`${plan.perDay} requests a day`, day, status);
      if (endUser !== undefined) {
        const user = await perEndUser.hit(`${keyId}:${endUser}`);
        if (user.count > publicDailyLimit) {
          throw exceeded(
            `${publicDailyLimit} requests a day from one client with a public key`,
            user,
            status,
          );
        }
      }
      return status;
    },
    async status(keyId, plan) {
      return statusOf(plan, await perMinute.peek(keyId));
    },
  };
}

function statusOf(plan: Plan, minute: WindowCount): RateLimitStatus {
  return {
    limit: plan.perMinute,
    remaining: Math.max(plan.perMinute - minute.count, 0),
    resetAt: minute.resetAt,
  };
}

function exceeded(limit: string, window: WindowCount, status: RateLimitStatus): ServiceError {
  const retryAfter = Math.max(Math.ceil((window.resetAt - Date.now()) / 1000), 1);
  return new ServiceError(
    'rate_limit_exceeded',
    `Rate limit exceeded: at most ${limit}. Retry after ${retryAfter} s.`,
    { retry_after: retryAfter },
    { rateLimit: status },
  );
}
