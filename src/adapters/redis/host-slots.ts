import { randomUUID } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { delay } from '../../delay.js';
import type { SharedHostSlots } from '../../ports/smtp.js';

export interface RedisHostSlotsOptions {
  /** Sessions to one mail host at once, across every process on this Redis. Default 2. */
  readonly perHost?: number;
  /**
   * A slot's lease: a process that dies holding one frees it after this long. Longer than
   * any session (the SMTP session deadline), so a live session never loses its slot.
   * Default 120 s.
   */
  readonly leaseMs?: number;
  /** Default `mv:smtp-slots:`. */
  readonly keyPrefix?: string;
  /** Longest pause between two tries while every slot of a host is taken. Default 100 ms. */
  readonly maxWaitMs?: number;
}

/**
 * Takes a slot when fewer than `limit` live leases are held: expired leases (their holder
 * died) are dropped first. Redis's own clock decides expiry, so the workers' clocks may
 * disagree without harm.
 */
const TAKE = `
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], nowMs + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
`;

/**
 * The per-MX-host connection limit shared by every worker on one Redis (issue 15): a sorted
 * set of leases per host. Give it to the SMTP prober (`smtpOptions.sharedHostSlots`); each
 * session then holds a slot here as well as its process's own.
 *
 * @example
 * const slots = createRedisHostSlots('redis://127.0.0.1:6379', { perHost: 2 });
 * const engine = createEngine({ smtpOptions: { sharedHostSlots: slots } });
 */
export function createRedisHostSlots(
  connection: string | Redis,
  options: RedisHostSlotsOptions = {},
): SharedHostSlots & { close(): Promise<void> } {
  const owned = typeof connection === 'string';
  const redis = owned
    ? new Redis(connection, { maxRetriesPerRequest: 2 } satisfies RedisOptions)
    : connection;
  if (owned) redis.on('error', () => undefined);
  const perHost = options.perHost ?? 2;
  if (!(Number.isInteger(perHost) && perHost >= 1)) throw new RangeError('perHost must be >= 1');
  const leaseMs = options.leaseMs ?? 120_000;
  const prefix = options.keyPrefix ?? 'mv:smtp-slots:';
  const maxWaitMs = options.maxWaitMs ?? 100;

  const take = (key: string, token: string) =>
    redis.eval(TAKE, 1, key, perHost, leaseMs, token) as Promise<number>;

  return {
    async acquire(host, signal) {
      const key = `${prefix}${host}`;
      const token = randomUUID();
      for (let wait = 5; ; wait = Math.min(wait * 2, maxWaitMs)) {
        signal?.throwIfAborted();
        if ((await take(key, token)) === 1) {
          let released = false;
          return () => {
            if (released) return;
            released = true;
            // Lost only if Redis is away: the lease then lapses by itself.
            redis.zrem(key, token).catch(() => undefined);
          };
        }
        // Jittered, so waiting workers do not retry in step.
        await delay(wait / 2 + Math.random() * (wait / 2), signal);
      }
    },
    async close() {
      if (owned) redis.disconnect();
    },
  };
}
