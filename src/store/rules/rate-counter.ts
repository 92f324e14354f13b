import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateCounter, WindowCount } from '../../ports/store.js';

/**
 * Limiters count without limiting: each is built with this many points and the service compares
 * the count with the caller's plan itself, so that one counter serves every plan and a plan
 * change keeps the window's count.
 */
export const UNLIMITED_POINTS = Number.MAX_SAFE_INTEGER;

/**
 * A RateCounter over a rate-limiter-flexible limiter. The library's increment is atomic in
 * every backend (a Map in memory, one upsert with RETURNING in SQLite), which is what makes
 * "exactly L of N concurrent requests" hold. Its windows run on the system clock (Date.now).
 * The limiter is built on first use: loading rate-limiter-flexible costs a fresh process about
 * 9 MB, which an engine-only user should not pay.
 */
export function rateCounterOver(limiter: () => Promise<RateLimiterAbstract>): RateCounter {
  let ready: Promise<RateLimiterAbstract> | undefined;
  const use = () => (ready ??= limiter());
  return {
    async hit(key) {
      const res = await (await use()).consume(key, 1);
      return countOf(res.consumedPoints, res.msBeforeNext);
    },
    async peek(key) {
      const res = await (await use()).get(key);
      return res === null ? countOf(0, 0) : countOf(res.consumedPoints, res.msBeforeNext);
    },
  };
}

function countOf(count: number, msBeforeNext: number): WindowCount {
  return { count, resetAt: Date.now() + Math.max(msBeforeNext, 0) };
}
