import { FlowProducer, Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import { delay } from '../../delay.js';
import { optional } from '../../optional.js';
import type { BatchRunner, BatchRunnerFactory, JobWork } from '../../ports/batch-runner.js';
import type { JobRecord, PendingJobItem } from '../../ports/store.js';

export interface BullmqRunnerOptions {
  /** The Redis that holds the queue: a URL (`redis://host:port/db`) or ioredis options. */
  readonly connection: string | RedisOptions;
  /** Default `mailverdict-batch`. Every API and worker process of one deployment shares it. */
  readonly queueName?: string;
  /**
   * BullMQ's key prefix. Default `bull`. Two deployments on one Redis (two store key
   * prefixes) need two queues: a distinct prefix or queue name each.
   */
  readonly prefix?: string;
  /**
   * Verify chunks in this process (`mailverdict worker`). Default false: the process only
   * queues the jobs it takes (`mailverdict serve --redis`).
   */
  readonly work?: boolean;
  /** Chunks this process verifies at once. Default 2. */
  readonly concurrency?: number;
  /** Addresses per chunk (a domain's addresses stay together when they fit). Default 500. */
  readonly chunkSize?: number;
  /**
   * How long a worker's claim on a chunk lasts without being renewed (BullMQ renews it at
   * half this while the worker lives). A killed worker's chunk goes to another after it.
   * Default 30 s.
   */
  readonly lockMs?: number;
  /** How often processing jobs are checked for a missing queue entry. Default 30 s. */
  readonly reconcileMs?: number;
}

/** A chunk: positions of one job, most of one or a few domains. */
interface ChunkData {
  readonly accountId: string;
  readonly jobId: string;
  readonly positions: readonly number[];
}

/** The job's last step, run once every chunk has ended: it finishes the job. */
interface FinishData {
  readonly accountId: string;
  readonly jobId: string;
}

const CHUNK = 'chunk';
const FINISH = 'finish';
/** Retries of a chunk that failed (Redis or the store down meanwhile), with backoff. */
const CHUNK_ATTEMPTS = 20;
/**
 * A chunk whose worker died is given to another this many times before it counts as failed;
 * the finish step then verifies what is left, so even that loses nothing.
 */
const MAX_STALLS = 50;
const KEEP_ENDED_SECONDS = 7 * 86_400;
/** How long stop() waits for BullMQ to close cleanly. */
const CLOSE_DEADLINE_MS = 5_000;

/**
 * The batch runner on BullMQ (docs/architecture.md, "Batch path"): a job becomes a flow, one child
 * per chunk of its pending addresses grouped by domain, and a parent that finishes the job once
 * every chunk has ended. Workers in any number of processes take chunks; each chunk verifies only
 * the positions still without a result and stores them with their settles (the store skips a
 * position stored already, and a ledger reference never applies twice), so a chunk retried
 * after its worker died re-verifies and re-charges nothing that was stored. The job finishes
 * once (`finishJob` answers a finished job as it stands), which queues its webhook once in
 * the shared outbox; a lease per attempt picks the one process that sends it.
 *
 * @example
 * const runner = bullmqBatchRunner({ connection: 'redis://127.0.0.1:6379', work: true });
 * const service = createService({ engine, store: createRedisStore(url), batch: { runner } });
 * await service.start();
 */
export function bullmqBatchRunner(options: BullmqRunnerOptions): BatchRunnerFactory {
  return (work) => createBullmqRunner(work, options);
}

function createBullmqRunner(work: JobWork, options: BullmqRunnerOptions): BatchRunner {
  const queueName = options.queueName ?? 'mailverdict-batch';
  const chunkSize = options.chunkSize ?? 500;
  const lockMs = options.lockMs ?? 30_000;
  let parts: Parts | undefined;
  let stopping = new AbortController();
  let reconciler: ReturnType<typeof setInterval> | undefined;

  interface Parts {
    readonly producer: FlowProducer;
    readonly queue: Queue;
    readonly worker: Worker | undefined;
    readonly connections: readonly Redis[];
  }

  function open(): Parts {
    if (parts !== undefined) return parts;
    // Producers fail fast while Redis is away (a submission then says so, and the reconciler
    // queues its job later); the worker's blocking connection waits for Redis to come back.
    const producerConnection = connect(options.connection, { maxRetriesPerRequest: 2 });
    const connections = [producerConnection];
    const producer = new FlowProducer({
      connection: producerConnection as ConnectionOptions,
      ...optional('prefix', options.prefix),
    });
    const queue = new Queue(queueName, {
      connection: producerConnection as ConnectionOptions,
      ...optional('prefix', options.prefix),
    });
    let worker: Worker | undefined;
    if (options.work === true) {
      const workerConnection = connect(options.connection, { maxRetriesPerRequest: null });
      connections.push(workerConnection);
      worker = new Worker(queueName, (job, _token, signal) => processJob(job, signal), {
        connection: workerConnection as ConnectionOptions,
        concurrency: options.concurrency ?? 2,
        lockDuration: lockMs,
        stalledInterval: Math.max(1_000, Math.floor(lockMs / 2)),
        maxStalledCount: MAX_STALLS,
        ...optional('prefix', options.prefix),
      });
      // Errors here are Redis going away and coming back: BullMQ reconnects by itself.
      worker.on('error', () => undefined);
    }
    for (const connection of connections) connection.on('error', () => undefined);
    parts = { producer, queue, worker, connections };
    return parts;
  }

  /** Queues the job's flow unless it is queued already (any process may ask, any time). */
  async function enqueue(job: JobRecord): Promise<void> {
    const { producer, queue } = open();
    const queued = await queue.getJob(job.id);
    if (queued !== undefined) {
      // Its last step gave up (Redis away through all its attempts): the job is still
      // processing in the store, so the step runs again rather than leave it so forever.
      if (await queued.isFailed()) await queued.retry();
      return;
    }
    const chunks = await work.pendingChunks(job, chunkSize);
    const retries = {
      attempts: CHUNK_ATTEMPTS,
      backoff: { type: 'exponential', delay: 1_000 },
      removeOnComplete: { age: KEEP_ENDED_SECONDS },
      removeOnFail: { age: KEEP_ENDED_SECONDS },
    };
    // One atomic add: the parent and every chunk, or nothing. Ids come from the job, so a
    // second add of the same job (two processes resuming it) adds nothing.
    await producer.add({
      name: FINISH,
      queueName,
      data: { accountId: job.accountId, jobId: job.id } satisfies FinishData,
      opts: { jobId: job.id, ...retries },
      children: chunks.map((positions, index) => ({
        name: CHUNK,
        queueName,
        data: { accountId: job.accountId, jobId: job.id, positions } satisfies ChunkData,
        // A chunk that fails for good still lets the finish step run (it mops up).
        opts: { jobId: `${job.id}-${index}`, ignoreDependencyOnFailure: true, ...retries },
      })),
    });
    work.started(job);
  }

  async function processJob(bullJob: Job, signal: AbortSignal | undefined): Promise<void> {
    const data = bullJob.data as ChunkData | FinishData;
    const job = await work.getJob(data.accountId, data.jobId);
    if (job?.status !== 'processing') return;
    const stop =
      signal === undefined ? stopping.signal : AbortSignal.any([signal, stopping.signal]);
    try {
      if (bullJob.name === CHUNK) {
        const items = await work.pendingAt(job, (data as ChunkData).positions);
        if (items.length > 0) await work.verify(job, listed(items), stop);
      } else {
        // Every chunk has ended; what a chunk that failed for good left is verified here.
        await work.finish(await work.verify(job, work.pending(job), stop));
      }
    } catch (error) {
      // A job that cannot go on fails now, with its reason; anything else (Redis or the store
      // away, this worker stopping) is thrown for BullMQ to retry the chunk.
      if (work.cannotGoOn(error)) await work.fail(job, error);
      else throw error;
    }
  }

  /**
   * Queues every processing job that is not queued, and renews its hold: a job waiting behind
   * others in the queue is alive, and its credits stay held for it (chunks renew it only
   * while they run).
   */
  async function reconcile(): Promise<number> {
    const jobs = await work.processing();
    for (const job of jobs) {
      await enqueue(job);
      await work.renewHold(job);
    }
    return jobs.length;
  }

  return {
    start(job) {
      // A job not queued now (Redis away) is queued by the next reconcile.
      enqueue(job).catch(() => undefined);
    },
    async resume() {
      open();
      reconciler ??= setInterval(
        () => void reconcile().catch(() => undefined),
        options.reconcileMs ?? 30_000,
      );
      reconciler.unref();
      return reconcile();
    },
    async stop() {
      if (reconciler !== undefined) clearInterval(reconciler);
      reconciler = undefined;
      stopping.abort(new Error('The batch worker stopped.'));
      const closing = parts;
      parts = undefined;
      if (closing !== undefined) {
        // BullMQ's close waits for Redis to answer, which it may never do while Redis is
        // away: after the deadline the connections are cut, and a chunk this worker held
        // goes to another once its lock lapses, as if the process had died.
        const deadline = new AbortController();
        const timeLeft = delay(CLOSE_DEADLINE_MS, deadline.signal).catch(() => undefined);
        // A connection BullMQ is still setting up (a stop right after the start) would fail
        // its set-up once cut, as an 'error' event nobody listens to any more, which ends the
        // process with a stack: it finishes first.
        await Promise.race([
          Promise.allSettled([
            closing.worker?.waitUntilReady(),
            closing.producer.waitUntilReady(),
            closing.queue.waitUntilReady(),
          ]),
          timeLeft,
        ]);
        await Promise.race([
          Promise.allSettled([
            closing.worker?.close(),
            closing.producer.close(),
            closing.queue.close(),
          ]),
          timeLeft,
        ]);
        deadline.abort();
        for (const connection of closing.connections) connection.disconnect();
      }
      stopping = new AbortController();
    },
    // Chunks run wherever a worker takes them: their progress shows in the job's status.
    async idle() {},
  };
}

function connect(connection: string | RedisOptions, overrides: RedisOptions): Redis {
  return typeof connection === 'string'
    ? new Redis(connection, overrides)
    : new Redis({ ...connection, ...overrides });
}

async function* listed(items: readonly PendingJobItem[]): AsyncGenerator<PendingJobItem> {
  yield* items;
}
