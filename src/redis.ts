/**
 * mailverdict/redis: the Store on Redis (ioredis), for several API and worker processes on one
 * truth: keys, rate limits, credits, idempotency, batch jobs and the webhook outbox. Kept out
 * of the main entry so that nothing else requires ioredis; install `ioredis` (major 5) beside
 * mailverdict to use it.
 *
 * @example
 * import { createRedisStore } from 'mailverdict/redis';
 * const store = createRedisStore(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 */
export {
  createRedisStore,
  REDIS_HOLD_SWEEP_MS,
  REDIS_KEY_PREFIX,
  REDIS_MAX_RETRIES_PER_REQUEST,
} from './adapters/redis/store.js';
export type { RedisStoreOptions } from './adapters/redis/store.js';
