import type { Clock } from '../ports/clock.js';
import type { AccountRecord, KeyRecord } from '../ports/store.js';

/**
 * How long authenticate trusts a key and its account as read from the store. Changes made
 * through this service (revoke, rotate, update, plan) are seen at once; changes made by another
 * process on the same store file (a CLI revoke beside `mailverdict serve`) within this long.
 */
export const KEY_CACHE_TTL_MS = 1000;
/** Past this many keys the cache starts afresh: it never grows with the keys an attacker tries. */
export const KEY_CACHE_MAX_ENTRIES = 10_000;

/** A key as authenticate found it, with its account. */
export interface KnownKey {
  readonly key: KeyRecord;
  readonly account: AccountRecord;
}

/**
 * Keys by hash, each trusted for `ttlMs` on `clock`. Only found keys are kept (an unknown key
 * is looked up every time, so guessing fills nothing). Reading the key and its account from
 * SQLite was 11.7% of the server's CPU profile for GET /v1/verify of a test address (50
 * connections, 1,000 keys), 1.4% from this cache; 14,500 -> 16,800 answers/s in that run.
 */
export interface KeyCache {
  get(hash: string): KnownKey | undefined;
  /** How many times the cache was cleared: read before a store read, handed to `set`. */
  generation(): number;
  /** Keeps `known` unless the cache was cleared since `generation` (its read may be stale). */
  set(hash: string, known: KnownKey, generation: number): void;
  /** Drops every entry: after any change to a key or an account made through the service. */
  clear(): void;
}

export function createKeyCache(
  clock: Clock,
  ttlMs = KEY_CACHE_TTL_MS,
  maxEntries = KEY_CACHE_MAX_ENTRIES,
): KeyCache {
  const entries = new Map<string, KnownKey & { readonly until: number }>();
  let clears = 0;
  return {
    get(hash) {
      const entry = entries.get(hash);
      if (entry === undefined) return undefined;
      if (clock.now() >= entry.until) {
        entries.delete(hash);
        return undefined;
      }
      return entry;
    },
    generation: () => clears,
    set(hash, known, generation) {
      if (ttlMs <= 0 || generation !== clears) return;
      if (entries.size >= maxEntries) entries.clear();
      entries.set(hash, { ...known, until: clock.now() + ttlMs });
    },
    clear() {
      clears++;
      entries.clear();
    },
  };
}
