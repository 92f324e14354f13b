import type { EngineOptions } from '../compose/engine.js';
import { optional } from '../optional.js';
import type { BatchOptions } from '../service/batch/batch.js';
import { UsageError } from './exit-codes.js';

export interface ScaleOutFlags {
  /** The Redis every API and worker process shares. */
  readonly redis: string;
  /** Verify batch chunks in this process too (always, for `mailverdict worker`). */
  readonly work: boolean;
  /** Chunks verified at once by this process. */
  readonly jobs?: number;
  /** SMTP sessions to one mail host at once, across every worker. */
  readonly smtpPerHost?: number;
  /** Addresses per chunk of the jobs this process queues. */
  readonly chunkSize?: number;
  /** How long a dead worker's chunk waits before another takes it. */
  readonly lockMs?: number;
}

/** What a process on a shared Redis adds to its service: the queue runner and shared MX slots. */
export interface ScaleOut {
  readonly batch: Pick<BatchOptions, 'runner'>;
  /** The engine's options with the per-host SMTP limit every worker shares. */
  engine(options: EngineOptions): EngineOptions;
  close(): Promise<void>;
}

/**
 * The BullMQ runner and the Redis host slots, loaded only by `--redis` commands: bullmq and
 * ioredis are optional peer dependencies.
 */
export async function scaleOut(flags: ScaleOutFlags): Promise<ScaleOut> {
  let bullmq: typeof import('../bullmq.js');
  try {
    bullmq = await import('../bullmq.js');
  } catch (error) {
    throw new UsageError(
      `--redis needs bullmq and ioredis (npm install bullmq@5 ioredis@5): ${(error as Error).message}`,
    );
  }
  const runner = bullmq.bullmqBatchRunner({
    connection: flags.redis,
    work: flags.work,
    ...optional('concurrency', flags.jobs),
    ...optional('chunkSize', flags.chunkSize),
    ...optional('lockMs', flags.lockMs),
  });
  const slots = flags.work
    ? bullmq.createRedisHostSlots(flags.redis, {
        ...optional('perHost', flags.smtpPerHost),
      })
    : undefined;
  return {
    batch: { runner },
    engine(options) {
      if (slots === undefined) return options;
      return {
        ...options,
        smtpOptions: {
          ...options.smtpOptions,
          sharedHostSlots: slots,
          // The local cap never below the shared one: the shared one is what holds.
          ...optional('maxConnectionsPerHost', flags.smtpPerHost),
        },
      };
    },
    async close() {
      await slots?.close();
    },
  };
}
