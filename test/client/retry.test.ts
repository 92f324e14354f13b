import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  backoffMs,
  BACKOFF_BASE_MS,
  BACKOFF_MAX_MS,
  parseRetryAfter,
} from '../../src/client/retry.js';
import { fcParams } from '../helpers/fast-check.js';

describe('retry timing', () => {
  it('full jitter: a wait from 0 up to min(cap, base x 2^retry)', () => {
    fc.assert(
      fc.property(
        fc.nat(40),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (retry, random) => {
          const wait = backoffMs(retry, () => random);
          expect(wait).toBeGreaterThanOrEqual(0);
          expect(wait).toBeLessThan(
            Math.max(1, Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** retry)),
          );
        },
      ),
      fcParams(),
    );
  });

  it('reads Retry-After as seconds or as an HTTP-date', () => {
    const now = Date.UTC(2027, 0, 15, 8, 0, 0);
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter(' 7 ', now)).toBe(7);
    expect(parseRetryAfter('Fri, 15 Jan 2027 08:00:30 GMT', now)).toBe(30);
    expect(parseRetryAfter('Fri, 15 Jan 2027 07:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
