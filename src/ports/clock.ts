/** Time as a port, so tests and caches can run on a fake clock. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = Object.freeze({ now: () => Date.now() });
