/**
 * Time slices for long synchronous work (an offline batch, a SQLite write of thousands of
 * rows, a download serialized page by page): such work checks `sliceSpent` between its steps
 * and, once the slice is spent, awaits `nextSlice()`, which hands the event loop back so that
 * requests, timers and I/O are served before it goes on.
 *
 * One queue for the whole thread: every waiting task gets one slice per turn of the event
 * loop, in turn. Each task yielding on its own (a setImmediate each) let N tasks run N slices
 * back to back in one turn, so that a request waited behind all of them; in turn, it waits for
 * one slice at most, whatever the number of jobs and downloads.
 */

/**
 * The default slice, in milliseconds. A 50,000-address offline job on SQLite, on a 2-core
 * machine kept busy by other processes: its slices took 4-5 ms of CPU at the median and 7-9
 * at p90 (a piece of work runs past the clock's reading), and the job's CPU time stayed within
 * the run-to-run noise of the unsliced job (3.2-4.4 s against 2.9-3.3 s); 2 ms slices
 * doubled the turns for no latency we could tell apart. What other clients see meanwhile:
 * bench/availability.ts.
 */
export const SLICE_MS = 5;

/**
 * A slice budget given as an option: milliseconds, 0 or more (`Infinity`: never yield), or the
 * default when not given. NaN would never be spent and a negative one always: a RangeError
 * naming the option instead.
 */
export function sliceMsOption(value: unknown, name: string): number {
  if (value === undefined) return SLICE_MS;
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new RangeError(`${name} must be 0 or more milliseconds, got ${shown(value)}`);
  }
  return value;
}

/**
 * A count given as an option (domains at once, addresses a domain, jobs at once): a whole
 * number from 1, or the default when not given; anything else a RangeError naming it, not a
 * run with a count nobody asked for.
 */
export function countOption(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a whole number from 1, got ${shown(value)}`);
  }
  return value;
}

function shown(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/** When the current slice began: set whenever a waiting task is given its turn. */
let sliceStartedAt = Number.NEGATIVE_INFINITY;
const waiting: (() => void)[] = [];
let turnScheduled = false;

/**
 * Whether this turn's slice has run `budgetMs` or more. A task woken by I/O rather than by its
 * turn finds the last slice long spent and yields once: a wait costs it one turn, no more.
 */
export function sliceSpent(budgetMs: number): boolean {
  return performance.now() - sliceStartedAt >= budgetMs;
}

/** Resolves on a later turn of the event loop, once every task queued before has had one. */
export function nextSlice(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    scheduleTurn();
  });
}

/**
 * Runs `work` and says how long it held the event loop: the time until it returned, which
 * for a store whose writes are synchronous (SQLite) is the whole write, and for one that
 * waits on the network (Redis) is only its share of the loop.
 */
export function heldFor<T>(work: () => T): { readonly value: T; readonly ms: number } {
  const started = performance.now();
  const value = work();
  return { value, ms: performance.now() - started };
}

function scheduleTurn(): void {
  if (turnScheduled) return;
  turnScheduled = true;
  // An immediate queued from inside an immediate runs on the next turn, after the loop has
  // polled for I/O: one task a turn, and the requests in between. setTimeout where there is
  // no setImmediate (browsers): the same order, at a coarser pace.
  (globalThis.setImmediate ?? setTimeout)(giveTurn);
}

function giveTurn(): void {
  turnScheduled = false;
  const resume = waiting.shift();
  if (waiting.length > 0) scheduleTurn();
  if (resume !== undefined) {
    sliceStartedAt = performance.now();
    resume();
  }
}
