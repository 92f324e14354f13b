import type { Store, WindowCount } from '../ports/store.js';
import { PUBLIC_KEY_DAILY_LIMIT, type Plan } from './plans.js';
import type { RateLimitStatus } from './rate-limit-status.js';
import { ServiceError } from './service-error.js';

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

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
 * starting at a key's first request in them. Each window is counted only once every window
 * before it has admitted the request, so a refusal counts against the refusing window and those
 * before it, never after:
 * - a public key's end user is counted first: a visitor refused for their own 10 a day spends
 *   nothing of the key's minute or day, so one visitor can never use up the key for the others;
 * - the minute before the day: a client hammering through its 429s does not burn its daily
 *   quota; requests refused by the day limit still count in their minute.
 * A refusal reports the window that refused: remaining 0, reset and retry-after at its end.
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
      if (endUser !== undefined) {
        const user = await perEndUser.hit(`${keyId}:${endUser}`);
        if (user.count > publicDailyLimit) {
          throw exceeded(
            `${publicDailyLimit} requests a day from one client with a public key`,
            plan,
            user,
          );
        }
      }
      const minute = await perMinute.hit(keyId);
      if (minute.count > plan.perMinute)
        throw exceeded(`${plan.perMinute} requests a minute`, plan, minute);
      const day = await perDay.hit(keyId);
      if (day.count > plan.perDay) throw exceeded(`${plan.perDay} requests a day`, plan, day);
      return statusOf(plan, minute);
    },
    async status(keyId, plan) {
      return statusOf(plan, await perMinute.peek(keyId));
    },
  };
}

/** Unix seconds of an epoch-milliseconds instant, rounded up: the window has ended by then. */
export function unixSeconds(epochMs: number): number {
  return Math.ceil(epochMs / 1000);
}

function statusOf(plan: Plan, minute: WindowCount): RateLimitStatus {
  return {
    limit: plan.perMinute,
    remaining: Math.max(plan.perMinute - minute.count, 0),
    reset: unixSeconds(minute.resetAt),
  };
}

function exceeded(limit: string, plan: Plan, window: WindowCount): ServiceError {
  // The counters' windows run on Date.now (rate-limiter-flexible's clock), so this does too.
  const retryAfter = Math.max(Math.ceil((window.resetAt - Date.now()) / 1000), 1);
  return new ServiceError(
    'rate_limit_exceeded',
    `Rate limit exceeded: at most ${limit}. Retry after ${retryAfter} s.`,
    { retry_after: retryAfter },
    { rateLimit: { limit: plan.perMinute, remaining: 0, reset: unixSeconds(window.resetAt) } },
  );
}
