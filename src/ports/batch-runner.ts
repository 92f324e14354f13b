import type { JobRecord, PendingJobItem } from './batch-store.js';

/**
 * What a batch runner asks of the service about its jobs, wherever it runs (this process, or
 * a queue's workers): verify some of a job's pending addresses and store their results, then
 * finish it. Runners differ only in how they split and schedule that work; everything they
 * read or change of a job goes through here, never through the store.
 */
export interface JobWork {
  /**
   * Verifies `items` (pending addresses of `job`) and stores each result with the ledger
   * request that pays for it, in flushes; renews the job's hold while it works and remakes it
   * if it lapsed. Resolves with the job as last stored; rejects when the job cannot go on
   * (`cannotGoOn`), or with the signal's reason when stopped (what landed is stored first).
   */
  verify(
    job: JobRecord,
    items: AsyncIterable<PendingJobItem>,
    signal: AbortSignal,
  ): Promise<JobRecord>;
  /**
   * Finishes the job as stored now: completed when every position has its result, else failed
   * with `reason` (or a count of what is missing); queues its webhook. Idempotent: a job
   * finished already stays as it is, with its one webhook.
   */
  finish(job: JobRecord, reason?: string | null): Promise<void>;
  /** Finishes the job as failed, with the reason `error` gives (see `cannotGoOn`). */
  fail(job: JobRecord, error: unknown): Promise<void>;
  /**
   * Whether `error`, from `verify`, says the job cannot go on (its credits are gone, its
   * results cannot be stored): it should fail now. Anything else (the store or a queue away,
   * the runner stopping) may pass on a retry.
   */
  cannotGoOn(error: unknown): boolean;
  /** Every pending address of the job, page by page, by position. */
  pending(job: JobRecord): AsyncIterable<PendingJobItem>;
  /**
   * The job's pending positions in chunks of at most `size` for workers, each domain's
   * addresses kept together (one MX lookup and one set of SMTP sessions per domain).
   */
  pendingChunks(job: JobRecord, size: number): Promise<number[][]>;
  /** The addresses among `positions` still without a result: a retried chunk skips the rest. */
  pendingAt(job: JobRecord, positions: readonly number[]): Promise<readonly PendingJobItem[]>;
  /** The job as stored now, for its own account; undefined once purged. */
  getJob(accountId: string, id: string): Promise<JobRecord | undefined>;
  /** Every job still processing, oldest first: what a (re)starting runner takes up. */
  processing(): Promise<readonly JobRecord[]>;
  /**
   * Keeps the job's credits held for another hold period from now: a job waiting for a
   * runner is alive, and its credits stay promised to it. Nothing for a job without a hold.
   */
  renewHold(job: JobRecord): Promise<void>;
  /** Tells the service's observer that a job started. */
  started(job: JobRecord): void;
  /** How often a runner renews the holds of the jobs waiting for it. */
  readonly renewEveryMs: number;
}

/** Schedules stored jobs onto the work that verifies them. */
export interface BatchRunner {
  start(job: JobRecord): void;
  /** Starts every job left processing, by a restart say; resolves with how many. */
  resume(): Promise<number>;
  /** Stops every job where it is (each resumes on the next start) and waits for them. */
  stop(): Promise<void>;
  /** Resolves once no job is running or waiting in this process. */
  idle(): Promise<void>;
}

/**
 * Makes a service's runner from its job work. The default runs jobs in this process;
 * `mailverdict/bullmq` spreads their chunks over worker processes.
 */
export type BatchRunnerFactory = (work: JobWork) => BatchRunner;
