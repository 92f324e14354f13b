import type { BatchRunner, BatchRunnerFactory, JobWork } from '../../ports/batch-runner.js';
import type { JobRecord } from '../../ports/store.js';

/** The in-process batch runner: a bounded number of jobs at once, each through verifyMany. */
export function inProcessRunner(options: { jobsAtOnce: number }): BatchRunnerFactory {
  return (work) => createRunner(work, options.jobsAtOnce);
}

function createRunner(work: JobWork, jobsAtOnce: number): BatchRunner {
  const waiting: JobRecord[] = [];
  const running = new Map<string, Promise<void>>();
  let controller = new AbortController();
  let renewal: ReturnType<typeof setInterval> | undefined;

  /**
   * A job waiting for a free runner keeps its hold too (its credits were reserved at submission):
   * left to lapse behind long jobs, the sweeper released it, the account could spend it, and
   * the job failed for credits it had been promised.
   */
  function renewWaiting(): void {
    for (const job of waiting) work.renewHold(job).catch(() => undefined);
  }

  function pump(): void {
    if (waiting.length > 0 && renewal === undefined) {
      renewal = setInterval(renewWaiting, work.renewEveryMs);
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
    work.started(job);
    try {
      await work.finish(await work.verify(job, work.pending(job), signal));
    } catch (error) {
      // Stopped: the job stays processing and resumes, from what is stored, on the next start.
      if (signal.aborted) return;
      await work.fail(job, error);
    }
  }

  return {
    start(job) {
      if (running.has(job.id) || waiting.some((w) => w.id === job.id)) return;
      waiting.push(job);
      pump();
    },
    async resume() {
      const jobs = await work.processing();
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
