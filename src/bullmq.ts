/**
 * mailverdict/bullmq: batch jobs across worker processes (docs/architecture.md, "Batch path"). A
 * job becomes a BullMQ flow of chunks grouped by domain; `mailverdict worker` processes verify them
 * against a shared store (mailverdict/redis). Also the per-MX-host limit that every worker shares.
 * Install `bullmq` (major 5) and `ioredis` (major 5) beside mailverdict to use it.
 */
export { bullmqBatchRunner } from './adapters/bullmq/runner.js';
export type { BullmqRunnerOptions } from './adapters/bullmq/runner.js';
export { createRedisHostSlots } from './adapters/redis/host-slots.js';
export type { RedisHostSlotsOptions } from './adapters/redis/host-slots.js';
export { chunkByDomain } from './service/batch/chunks.js';
