import type { JobRecord } from '../../ports/store.js';
import { failureReason, type JobWork } from './job-work.js';

/** Schedules stored jobs onto the work that verifies them (DESIGN 5.5, 6). */
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

/** The in-process batch runner: a bounded number of jobs at once, each through verifyMany. */
export function inProcessRunner(options: { jobsAtOnce: number }): BatchRunnerFactory {
  return (work) => createRunner(work, options.jobsAtOnce);
}

function createRunner(work: JobWork, jobsAtOnce: number): BatchRunner {
  const { store, clock } = work.ctx;
  const waiting: JobRecord[] = [];
  const running = new Map<string, Promise<void>>();
  let controller = new AbortController();
  let renewal: ReturnType<typeof setInterval> | undefined;

  /**
   * A job waiting for a free runner keeps its hold too (DESIGN 5.3: reserved at submission):
   * left to lapse behind long jobs, the sweeper released it, the account could spend it, and
   * the job failed for credits it had been promised.
   */
  function renewWaiting(): void {
    const expiresAt = clock.now() + work.settings.holdTtlMs;
    for (const job of waiting) {
      if (job.reservation === null) continue;
      store.renewHold(job.accountId, job.reservation, expiresAt).catch(() => undefined);
    }
  }

  function pump(): void {
    if (waiting.length > 0 && renewal === undefined) {
      renewal = setInterval(renewWaiting, work.settings.renewEveryMs);
      renewal.unref();
    }
    while (running.size < jobsAtOnce && waiting.length > 0) {
      const job = waiting.shift() as JobRecord;
      const run = runJob(job, controller.signal)
        .catch(() => undefined)
        .finally(() => {
          running.delete(job.id);
          pump();
        });
      running.set(job.id, run);
    }
    if (waiting.length === 0 && renewal !== undefined) {
      clearInterval(renewal);
      renewal = undefined;
    }
  }

  async function runJob(job: JobRecord, signal: AbortSignal): Promise<void> {
    work.ctx.observer?.onJobProgress?.({ processed: 0, event: 'started' });
    try {
      await work.finish(await work.verify(job, work.pending(job), signal));
    } catch (error) {
      // Stopped: the job stays processing and resumes, from what is stored, on the next start.
      if (signal.aborted) return;
      await work.finish(job, failureReason(error));
    }
  }

  return {
    start(job) {
      if (running.has(job.id) || waiting.some((w) => w.id === job.id)) return;
      waiting.push(job);
      pump();
    },
    async resume() {
      const jobs = await store.listJobs('processing');
      for (const job of jobs) this.start(job);
      return jobs.length;
    },
    async stop() {
      waiting.length = 0;
      clearInterval(renewal);
      renewal = undefined;
      controller.abort(new Error('The batch runner stopped.'));
      await Promise.allSettled([...running.values()]);
      controller = new AbortController();
    },
    async idle() {
      while (running.size > 0) await Promise.allSettled([...running.values()]);
    },
  };
}
