/** Time as a port, so tests and caches can run on a fake clock. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = Object.freeze({ now: () => Date.now() });

/** A clock that moves only when told: the in-memory twin of the Clock port. */
export interface ManualClock extends Clock {
  /** Moves time on by `ms` (a finite number, 0 or more) and answers the new time. */
  advance(ms: number): number;
  /** Sets the time to `ms` since the Unix epoch, backwards too (a clock that was wrong). */
  set(ms: number): number;
}

/**
 * A manual clock starting at `startMs` (default 0, the Unix epoch): give it as the `clock` of
 * an engine, a service or a DNS cache, and expire holds, grace periods and cache entries in a
 * test without waiting.
 *
 * @example
 * const clock = createManualClock(Date.UTC(2026, 0, 1));
 * clock.advance(3_600_000); // an hour later, at once
 */
export function createManualClock(startMs = 0): ManualClock {
  let now = finiteTime(startMs, 'createManualClock');
  return {
    now: () => now,
    advance(ms) {
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
        throw new RangeError(
          `advance takes a finite number of milliseconds, 0 or more (set() moves time back), got ${String(ms)}`,
        );
      }
      now += ms;
      return now;
    },
    set(ms) {
      now = finiteTime(ms, 'set');
      return now;
    },
  };
}

function finiteTime(ms: unknown, caller: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw new RangeError(
      `${caller} takes a time in milliseconds since the Unix epoch, got ${String(ms)}`,
    );
  }
  return ms;
}
