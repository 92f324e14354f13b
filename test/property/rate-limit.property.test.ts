import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PLANS, type PlanName } from '../../src/service/plans.js';
import type { ServiceError } from '../../src/service/service-error.js';
import { fcParams } from '../helpers/fast-check.js';
import { fixture, STORES } from '../helpers/service.js';

/**
 * The rate limiter against a model of fixed windows (per minute, per day): bursts of concurrent
 * requests at random moments; each burst admits exactly what the model says, and the
 * X-RateLimit figures (remaining, reset) match the model's minute window.
 */

interface Window {
  start: number;
  count: number;
}

class WindowModel {
  private window: Window | undefined;
  constructor(private readonly lengthMs: number) {}
  /** Counts one request at `now`; returns the count and the window's end. */
  hit(now: number): { count: number; resetAt: number } {
    if (this.window === undefined || now >= this.window.start + this.lengthMs) {
      this.window = { start: now, count: 0 };
    }
    this.window.count++;
    return { count: this.window.count, resetAt: this.window.start + this.lengthMs };
  }
}

const schedule = fc.array(
  fc.record({
    // From a moment later to past a day, so that both windows roll over now and then.
    advanceMs: fc.oneof(
      fc.integer({ min: 0, max: 2_000 }),
      fc.integer({ min: 1_000, max: 70_000 }),
      fc.constant(86_400_000),
    ),
    burst: fc.integer({ min: 1, max: 25 }),
  }),
  { minLength: 1, maxLength: 25 },
);

afterEach(() => {
  vi.useRealTimers();
});

const byReset = (a: { reset: number } | undefined, b: { reset: number } | undefined) =>
  (a?.reset ?? 0) - (b?.reset ?? 0);

describe.each(STORES)(
  'rate limiter on %s, against a model of fixed windows',
  (_name, makeStore) => {
    it('admits per burst exactly what the model admits, with its remaining and reset', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom<PlanName>('free', 'starter'),
          schedule,
          async (planName, steps) => {
            vi.useFakeTimers({ toFake: ['Date'] });
            let now = 1_800_000_000_000;
            vi.setSystemTime(now);
            const { service, secret } = await fixture({
              store: makeStore(),
              account: { plan: planName },
            });
            const plan = PLANS[planName];
            const minute = new WindowModel(60_000);
            const day = new WindowModel(86_400_000);
            try {
              for (const { advanceMs, burst } of steps) {
                now += advanceMs;
                vi.setSystemTime(now);
                const expected = Array.from({ length: burst }, () => {
                  const m = minute.hit(now);
                  if (m.count > plan.perMinute) return { admitted: false, minute: m, refusal: m };
                  const d = day.hit(now);
                  const admitted = d.count <= plan.perDay;
                  return { admitted, minute: m, refusal: admitted ? undefined : d };
                });
                const outcomes = await Promise.allSettled(
                  Array.from({ length: burst }, () =>
                    service.authenticate({ apiKey: secret, endpoint: 'verify' }),
                  ),
                );
                const admitted = outcomes.filter((o) => o.status === 'fulfilled');
                expect(admitted).toHaveLength(expected.filter((e) => e.admitted).length);
                const figures = admitted
                  .map((o) => (o as PromiseFulfilledResult<{ rateLimit: object }>).value.rateLimit)
                  .sort(
                    (a, b) =>
                      (b as { remaining: number }).remaining -
                      (a as { remaining: number }).remaining,
                  );
                // X-RateLimit-Reset: Unix seconds, rounded up.
                expect(figures).toEqual(
                  expected
                    .filter((e) => e.admitted)
                    .map((e) => ({
                      limit: plan.perMinute,
                      remaining: Math.max(plan.perMinute - e.minute.count, 0),
                      reset: Math.ceil(e.minute.resetAt / 1000),
                    })),
                );
                // A refusal reports the window that refused (the minute's or the day's).
                const refusals = outcomes
                  .filter((o) => o.status === 'rejected')
                  .map((o) => (o as PromiseRejectedResult).reason as ServiceError);
                for (const error of refusals) expect(error.code).toBe('rate_limit_exceeded');
                expect(refusals.map((error) => error.rateLimit).sort(byReset)).toEqual(
                  expected
                    .flatMap((e) => (e.refusal === undefined ? [] : [e.refusal]))
                    .map((window) => ({
                      limit: plan.perMinute,
                      remaining: 0,
                      reset: Math.ceil(window.resetAt / 1000),
                    }))
                    .sort(byReset),
                );
              }
            } finally {
              await service.store.close();
              vi.useRealTimers();
            }
          },
        ),
        fcParams({ numRuns: 40 }),
      );
    }, 120_000);
  },
);
