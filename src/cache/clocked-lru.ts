import { LRUCache } from 'lru-cache';
import type { Clock } from '../ports/clock.js';

/**
 * An lru-cache whose TTLs run on the injected clock, so tests move time by hand. Two traps
 * this avoids: lru-cache memoizes "now" for 1 ms unless ttlResolution is 0, and it treats
 * an entry stored at time 0 as never stale (a fake clock must not start at 0).
 */
export function createClockedLru<V extends NonNullable<unknown>>(
  clock: Clock,
  options: { readonly max: number; readonly ttl: number },
): LRUCache<string, V> {
  return new LRUCache<string, V>({
    max: options.max,
    ttl: options.ttl,
    ttlAutopurge: false,
    ttlResolution: 0,
    perf: { now: () => clock.now() },
  });
}
