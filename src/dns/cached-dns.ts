import { LRUCache } from 'lru-cache';
import { systemClock, type Clock } from '../ports/clock.js';
import type { Dns, MxAnswer } from '../ports/dns.js';
import { raceAbort } from './abortable.js';

export interface CachedDnsOptions {
  /** How long a positive answer (records, implicit MX) is kept. Default 5 minutes. */
  readonly ttlMs?: number;
  /** How long NXDOMAIN, null MX and no-records answers are kept. Default 1 minute. */
  readonly negativeTtlMs?: number;
  /** How long a failure (timeout, SERVFAIL) is kept, so a dead server is not hammered. Default 10 s. */
  readonly failureTtlMs?: number;
  /** Most domains kept. Default 10,000. */
  readonly maxEntries?: number;
  readonly clock?: Clock;
}

/**
 * Puts a cache in front of a Dns: answers are kept by kind for their own TTL, and concurrent
 * lookups of one domain share one query (single-flight), so a batch over 2,000 domains asks
 * about 2,000 questions whatever its size.
 */
export function createCachedDns(inner: Dns, options: CachedDnsOptions = {}): Dns {
  const clock = options.clock ?? systemClock;
  const ttl = options.ttlMs ?? 300_000;
  const negativeTtl = options.negativeTtlMs ?? 60_000;
  const failureTtl = options.failureTtlMs ?? 10_000;
  const cache = new LRUCache<string, MxAnswer>({
    max: options.maxEntries ?? 10_000,
    ttl,
    ttlAutopurge: false,
    // Read the injected clock on every get: lru-cache otherwise memoizes "now" for 1 ms.
    ttlResolution: 0,
    perf: { now: () => clock.now() },
  });
  const inFlight = new Map<string, Promise<MxAnswer>>();

  const ttlFor = (answer: MxAnswer): number => {
    switch (answer.kind) {
      case 'records':
      case 'implicit':
        return ttl;
      case 'failure':
        return failureTtl;
      case 'offline':
        return 0;
      default:
        return negativeTtl;
    }
  };

  return {
    mx(domain, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      const key = domain.toLowerCase();
      const cached = cache.get(key);
      if (cached !== undefined) return Promise.resolve(cached);
      let pending = inFlight.get(key);
      if (pending === undefined) {
        // The shared query runs without any one caller's signal: one caller giving up must
        // not fail the others. The inner Dns has its own deadline.
        pending = inner.mx(key).then(
          (answer) => {
            inFlight.delete(key);
            const answerTtl = ttlFor(answer);
            if (answerTtl > 0) cache.set(key, answer, { ttl: answerTtl });
            return answer;
          },
          (error: unknown) => {
            inFlight.delete(key);
            throw error;
          },
        );
        inFlight.set(key, pending);
      }
      return raceAbort(pending, signal);
    },
    // Mail host addresses are asked once per SMTP session, not per address: no cache needed.
    ...(inner.addresses === undefined
      ? {}
      : { addresses: (host, signal) => inner.addresses!(host, signal) }),
  };
}
