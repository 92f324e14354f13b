import { NetworkError, ApiError } from './errors.js';

/** Raised inside a Deadline's signal when its time is up, to tell a timeout from a caller's abort. */
class TimeUp extends Error {
  override name = 'TimeoutError';
}

/**
 * One attempt's signal: aborted by the caller's signals (the client's, the call's) or after
 * `ms` without progress (`restart()` is progress: a byte of a streamed body). Listeners are
 * removed by `dispose()`, so that a client-wide signal does not collect one per request.
 */
export class Deadline {
  readonly #controller = new AbortController();
  readonly #sources: readonly AbortSignal[];
  readonly #ms: number;
  readonly #onAbort: () => void;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(ms: number, sources: readonly (AbortSignal | undefined)[]) {
    this.#ms = ms;
    this.#sources = sources.filter((signal): signal is AbortSignal => signal !== undefined);
    this.#onAbort = () => {
      const aborted = this.#sources.find((signal) => signal.aborted);
      this.#controller.abort(aborted?.reason);
    };
    for (const signal of this.#sources) {
      if (signal.aborted) this.#onAbort();
      else signal.addEventListener('abort', this.#onAbort, { once: true });
    }
    this.restart();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Gives the attempt another `ms` from now. */
  restart(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#controller.signal.aborted) return;
    this.#timer = setTimeout(
      () => this.#controller.abort(new TimeUp(`no answer within ${this.#ms} ms`)),
      this.#ms,
    );
  }

  dispose(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const signal of this.#sources) signal.removeEventListener('abort', this.#onAbort);
  }

  /**
   * What an error raised during the attempt means: the caller's abort (its reason, as fetch
   * itself rejects), a timeout, an error already ours, or a broken connection.
   */
  failure(error: unknown, what: string): unknown {
    const aborted = this.#sources.find((signal) => signal.aborted);
    if (aborted !== undefined) return aborted.reason;
    if (this.#controller.signal.reason instanceof TimeUp) {
      return new NetworkError('timeout', `${what}: no answer within ${this.#ms} ms`, error);
    }
    if (error instanceof ApiError) return error;
    const detail = error instanceof Error ? `: ${error.message}` : '';
    return new NetworkError('connection_failed', `${what}: the connection failed${detail}`, error);
  }
}

/** The first of `signals` to abort, as one signal; `dispose()` removes its listeners. */
export function anySignal(signals: readonly (AbortSignal | undefined)[]): {
  signal: AbortSignal | undefined;
  dispose(): void;
} {
  const present = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  if (present.length <= 1) return { signal: present[0], dispose: () => {} };
  const controller = new AbortController();
  const onAbort = () => controller.abort(present.find((signal) => signal.aborted)?.reason);
  for (const signal of present) {
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  }
  return {
    signal: controller.signal,
    dispose: () => present.forEach((signal) => signal.removeEventListener('abort', onAbort)),
  };
}
