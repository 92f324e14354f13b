/** A billing period: from `start` (inclusive) to `end` (exclusive), in epoch milliseconds. */
export interface BillingPeriod {
  readonly start: number;
  readonly end: number;
}

/**
 * The monthly billing period that contains `now`, for an account whose periods start on
 * `anchorDay` (1-31) at 00:00 UTC. A month too short for the anchor starts its period on its
 * last day (an account anchored on the 31st renews on Feb 28 or 29), the way card billing does.
 */
export function billingPeriod(anchorDay: number, now: number): BillingPeriod {
  if (!Number.isInteger(anchorDay) || anchorDay < 1 || anchorDay > 31) {
    throw new RangeError(`anchorDay must be an integer from 1 to 31, got ${anchorDay}`);
  }
  const date = new Date(now);
  let year = date.getUTCFullYear();
  let month = date.getUTCMonth();
  // The period starts in this month if its start day has come, else in the month before.
  if (now < periodStart(year, month, anchorDay)) {
    month -= 1;
    if (month < 0) {
      month = 11;
      year -= 1;
    }
  }
  const start = periodStart(year, month, anchorDay);
  const end =
    month === 11 ? periodStart(year + 1, 0, anchorDay) : periodStart(year, month + 1, anchorDay);
  return { start, end };
}

function periodStart(year: number, month: number, anchorDay: number): number {
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(anchorDay, lastDay));
}

/** A billing period in the account object's wire form: `YYYY-MM-DD` in UTC, end inclusive. */
export interface BillingPeriodDates {
  /** The first day, `YYYY-MM-DD` (UTC). */
  readonly start: string;
  /** The last day, inclusive: the day before the next period starts. */
  readonly end: string;
}

const DAY_MS = 86_400_000;

/** The period's first and last days as `YYYY-MM-DD` (UTC), the end inclusive. */
export function billingPeriodDates(period: BillingPeriod): BillingPeriodDates {
  return { start: isoDay(period.start), end: isoDay(period.end - DAY_MS) };
}

function isoDay(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 10);
}
