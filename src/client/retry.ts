/**
 * When a failed call is tried again, and after how long. The API's own advice: on 429 wait
 * Retry-After seconds; on 5xx, 408 and broken connections back off exponentially with full
 * jitter (AWS Architecture Blog, "Exponential Backoff and Jitter": a random wait between 0
 * and the exponential ceiling spreads clients that failed together); never on another 4xx.
 * Only requests that are safe to repeat are retried: GET, and POST with an idempotency key.
 */
import { ApiError, isTransient, NetworkError } from './errors.js';

/** Retries after the first attempt, by default. */
export const DEFAULT_MAX_RETRIES = 3;
/** The ceiling of the first backoff; it doubles with each retry. */
export const BACKOFF_BASE_MS = 500;
/** No backoff waits longer than this, however many retries came before. */
export const BACKOFF_MAX_MS = 20_000;
/**
 * A Retry-After longer than this is not waited for: the error is thrown at once, carrying
 * `retryAfter`, for the caller to decide (a day limit answers with hours).
 */
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;

/** What decides the retries of one client. */
export interface RetryPolicy {
  readonly maxRetries: number;
  readonly maxRetryAfterMs: number;
  /** A number in [0, 1): Math.random by default, a fixed one in tests. */
  readonly random: () => number;
}

/** Full jitter: a uniform wait between 0 and min(cap, base x 2^retry). */
export function backoffMs(retry: number, random: () => number): number {
  return Math.floor(random() * Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** retry));
}

/** Statuses that say "try again later" rather than "this request is wrong". */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/**
 * How long to wait before retry number `retry` (0 for the first) of a call that failed with
 * `error`, or undefined when it must not be retried.
 */
export function retryDelayMs(
  error: unknown,
  retry: number,
  repeatable: boolean,
  policy: RetryPolicy,
): number | undefined {
  if (!repeatable || retry >= policy.maxRetries) return undefined;
  if (error instanceof NetworkError) {
    return isTransient(error) ? backoffMs(retry, policy.random) : undefined;
  }
  if (!(error instanceof ApiError) || !isRetryableStatus(error.status)) return undefined;
  if (error.retryAfter === undefined) return backoffMs(retry, policy.random);
  const wait = error.retryAfter * 1000;
  return wait > policy.maxRetryAfterMs ? undefined : wait;
}

const DELTA_SECONDS = /^\d{1,10}$/;

/**
 * Retry-After (RFC 9110 10.2.3) in seconds: delay-seconds, or an HTTP-date counted from
 * `nowMs`; undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (DELTA_SECONDS.test(text)) return Number(text);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - nowMs) / 1000));
}
