/**
 * Caps on simultaneous connections, per mail host and in total: politeness towards each
 * server (many count connections per client IP and block past a few) and a bound on our
 * own sockets. Waiters are served first come, first served.
 */
export class ConnectionLimits {
  readonly #perHost: number;
  readonly #total: number;
  readonly #open = new Map<string, number>();
  #openTotal = 0;
  readonly #waiting: Array<{ host: string; grant: () => void }> = [];

  constructor(perHost: number, total: number) {
    if (!(perHost >= 1 && total >= 1)) throw new RangeError('connection limits must be >= 1');
    this.#perHost = perHost;
    this.#total = total;
  }

  /** Waits for a slot to `host`; the returned function gives it back (once). */
  acquire(host: string, signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise((resolve, reject) => {
      const waiter = {
        host,
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.#take(host));
        },
      };
      const onAbort = () => {
        const index = this.#waiting.indexOf(waiter);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(signal?.reason as Error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
      this.#serve();
    });
  }

  #take(host: string): () => void {
    this.#open.set(host, (this.#open.get(host) ?? 0) + 1);
    this.#openTotal++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#open.get(host) ?? 1) - 1;
      if (left === 0) this.#open.delete(host);
      else this.#open.set(host, left);
      this.#openTotal--;
      this.#serve();
    };
  }

  #serve(): void {
    for (let i = 0; i < this.#waiting.length && this.#openTotal < this.#total;) {
      const waiter = this.#waiting[i] as { host: string; grant: () => void };
      if ((this.#open.get(waiter.host) ?? 0) < this.#perHost) {
        this.#waiting.splice(i, 1);
        waiter.grant();
      } else {
        i++;
      }
    }
  }
}
