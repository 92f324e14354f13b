import { systemClock, type Clock } from '../ports/clock.js';
import type { Dns, MxAnswer } from '../ports/dns.js';
import type { DnsLookupKind, Observer } from '../ports/observer.js';
import { createClockedLru } from '../cache/clocked-lru.js';
import { optional } from '../optional.js';
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
  /** Told of each query sent to `inner` and each lookup answered without one. */
  readonly observer?: Pick<Observer, 'onDnsQuery' | 'onDnsCacheHit'>;
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
  const max = options.maxEntries ?? 10_000;
  const { observer } = options;

  /**
   * One lookup function with its own cache: a kept answer is returned as is, and concurrent
   * callers of one key share one query (single-flight). The shared query runs without any
   * one caller's signal: one caller giving up must not fail the others; the inner Dns has
   * its own deadline.
   */
  function cached<V extends NonNullable<unknown>>(
    kind: DnsLookupKind,
    lookup: (key: string) => Promise<V>,
    ttlFor: (answer: V) => number,
  ): (key: string, signal?: AbortSignal) => Promise<V> {
    const cache = createClockedLru<V>(clock, { max, ttl });
    const inFlight = new Map<string, Promise<V>>();
    return (name, signal) => {
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      // DNS names are case-insensitive, and `example.com.` is `example.com` made absolute.
      const key = name.toLowerCase().replace(/\.$/, '');
      const kept = cache.get(key);
      if (kept !== undefined) {
        observer?.onDnsCacheHit?.(kind);
        return Promise.resolve(kept);
      }
      let pending = inFlight.get(key);
      if (pending !== undefined) {
        observer?.onDnsCacheHit?.(kind);
      } else {
        observer?.onDnsQuery?.(kind);
        pending = lookup(key).then(
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
    };
  }

  const mxTtl = (answer: MxAnswer): number => {
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

  const innerAddresses = inner.addresses?.bind(inner);
  return {
    ...optional('health', inner.health?.bind(inner)),
    mx: cached('mx', (domain) => inner.mx(domain), mxTtl),
    // Every SMTP session resolves its MX host: a batch over one domain opens many sessions.
    // No addresses may mean a failed lookup, so an empty answer is kept like a failure.
    ...optional(
      'addresses',
      innerAddresses &&
        cached('addresses', innerAddresses, (list) => (list.length > 0 ? ttl : failureTtl)),
    ),
  };
}
