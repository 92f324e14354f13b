import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { billingPeriod, billingPeriodDates } from '../../src/service/billing-period.js';
import { PLANS, isPlanName } from '../../src/service/plans.js';
import { fcParams } from '../helpers/fast-check.js';

const utc = (text: string) => Date.parse(`${text}T00:00:00Z`);

describe('billingPeriod', () => {
  it('runs monthly from the anchor day', () => {
    expect(billingPeriod(15, utc('2026-11-21'))).toEqual({
      start: utc('2026-11-15'),
      end: utc('2026-12-15'),
    });
    expect(billingPeriod(15, utc('2026-11-14') + 86_399_999)).toEqual({
      start: utc('2026-10-15'),
      end: utc('2026-11-15'),
    });
  });

  it('starts on the last day of a month too short for the anchor', () => {
    expect(billingPeriod(31, utc('2026-03-01'))).toEqual({
      start: utc('2026-02-28'),
      end: utc('2026-03-31'),
    });
    expect(billingPeriod(30, utc('2028-02-29'))).toEqual({
      start: utc('2028-02-29'),
      end: utc('2028-03-30'),
    });
  });

  it('crosses the year', () => {
    expect(billingPeriod(20, utc('2027-01-05'))).toEqual({
      start: utc('2026-12-20'),
      end: utc('2027-01-20'),
    });
  });

  it('refuses an anchor outside 1-31', () => {
    for (const day of [0, 32, 1.5, Number.NaN]) {
      expect(() => billingPeriod(day, 0)).toThrow(RangeError);
    }
  });

  it('always contains now, lasts 28 to 31 days, and chains into the next period', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 31 }),
        fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2200, 0, 1) }),
        (anchor, now) => {
          const period = billingPeriod(anchor, now);
          expect(period.start).toBeLessThanOrEqual(now);
          expect(period.end).toBeGreaterThan(now);
          const days = (period.end - period.start) / 86_400_000;
          expect(days).toBeGreaterThanOrEqual(28);
          expect(days).toBeLessThanOrEqual(31);
          expect(billingPeriod(anchor, period.end).start).toBe(period.end);
        },
      ),
      fcParams(),
    );
  });
});

describe('billingPeriodDates', () => {
  it('writes the period as YYYY-MM-DD (UTC), the end being its last day, inclusive', () => {
    expect(billingPeriodDates(billingPeriod(31, utc('2026-03-01')))).toEqual({
      start: '2026-02-28',
      end: '2026-03-30',
    });
    expect(billingPeriodDates(billingPeriod(1, utc('2026-12-31') + 86_399_999))).toEqual({
      start: '2026-12-01',
      end: '2026-12-31',
    });
  });

  it('chains: the day after a period ends starts the next one', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 31 }),
        fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2200, 0, 1) }),
        (anchor, now) => {
          const period = billingPeriod(anchor, now);
          const dates = billingPeriodDates(period);
          expect(dates.start).toMatch(/^\d{4}-\d{2}-\d{2}$/);
          expect(utc(dates.start)).toBe(period.start);
          expect(utc(dates.end) + 86_400_000).toBe(period.end);
          expect(billingPeriodDates(billingPeriod(anchor, period.end)).start).toBe(
            new Date(period.end).toISOString().slice(0, 10),
          );
        },
      ),
      fcParams(),
    );
  });
});

describe('plans', () => {
  it('carry the documented limits per minute and per day', () => {
    expect(Object.values(PLANS).map((p) => [p.name, p.perMinute, p.perDay])).toEqual([
      ['free', 10, 100],
      ['starter', 60, 10_000],
      ['professional', 120, 50_000],
      ['enterprise', 300, 500_000],
    ]);
    expect(isPlanName('starter')).toBe(true);
    expect(isPlanName('toString')).toBe(false);
  });
});
