import { isFree } from '../../engine/free-verdict.js';
import type { MethodName } from '../../engine/methods.js';
import type { JobWork } from '../../ports/batch-runner.js';
import { UNKNOWN_REASONS, type Verdict } from '../../engine/verdict.js';
import type {
  JobRecord,
  JobResultState,
  JobResultWrite,
  LedgerRequest,
  PendingJobItem,
} from '../../ports/store.js';
import { optional } from '../../optional.js';
import { heldFor } from '../../slices.js';
import type { ServiceContext } from '../context.js';
import type { Filters } from '../filters.js';
import { eventOf } from './results.js';
import { jobHoldRef, jobItemRef, resultOf } from './submit.js';
import { chunkByDomain } from './chunks.js';
import type { WebhookDispatcher } from './webhooks.js';

export interface JobWorkSettings {
  /** Domains verified at once per job (verifyMany's `concurrency`). */
  readonly concurrency: number;
  /** Addresses of one domain verified at once (verifyMany's `perDomain`). */
  readonly perDomain: number;
  /** How long a job's hold lasts unless renewed: a runner that dies lets its credits go. */
  readonly holdTtlMs: number;
  /** How often a working runner renews its hold. */
  readonly renewEveryMs: number;
  /** Results stored (and settled) per transaction. */
  readonly flushSize: number;
  /** ...or sooner, once the oldest unstored result is this old, so progress shows (slow SMTP). */
  readonly flushMs: number;
  /** How long the job's work holds the event loop at a time (verifyMany's `sliceMs`). */
  readonly sliceMs: number;
  readonly retentionMs: number;
  /** The base URL of a job stored before its own was kept with it; null: a path. */
  readonly baseUrl: string | null;
  readonly webhooks: WebhookDispatcher;
}

/** Pending addresses read from the store per page. */
export const PENDING_PAGE = 1_000;

/** A job that cannot go on, with the reason its status will give. */
export class JobFailure extends Error {}

/** A result waiting to be stored: charged (settle) unless it could not be verified. */
interface Landed {
  readonly position: number;
  readonly record: string;
  readonly state: JobResultState;
  readonly charge: boolean;
}

export function createJobWork(
  ctx: ServiceContext,
  filters: Pick<Filters, 'ipFilter'>,
  settings: JobWorkSettings,
): JobWork {
  const { engine, store, clock } = ctx;

  /** The job's pending addresses, a page at a time, by position. */
  async function* pendingPages(
    jobId: string,
    size: number,
  ): AsyncGenerator<readonly PendingJobItem[]> {
    let after = -1;
    for (;;) {
      const page = await store.pendingJobItems(jobId, after, size);
      if (page.length === 0) return;
      after = (page[page.length - 1] as PendingJobItem).position;
      yield page;
    }
  }

  async function* pending(job: JobRecord): AsyncGenerator<PendingJobItem> {
    for await (const page of pendingPages(job.id, PENDING_PAGE)) yield* page;
  }

  /**
   * The hold lapsed (a long stop, a job long in a queue): reserve what is left under a new
   * reference. Chunks of one job run at once in several workers, so another may have remade
   * it already, or be remaking it under the same reference right now: then its hold is the
   * job's, and this chunk settles against it.
   */
  async function rehold(job: JobRecord): Promise<JobRecord> {
    const current = await store.getJob(job.accountId, job.id);
    if (current?.status !== 'processing') {
      throw new JobFailure('internal_error: the job finished while this part of it ran');
    }
    if (current.reservation !== job.reservation) return current;
    let remaining = 0;
    for await (const page of pendingPages(job.id, PENDING_PAGE * 10)) remaining += page.length;
    if (remaining === 0) return current;
    const reserve: LedgerRequest = {
      kind: 'reserve',
      ref: jobHoldRef(job.id, current.holds + 1),
      amount: remaining * job.cost,
      expiresAt: clock.now() + settings.holdTtlMs,
      note: `batch ${job.id}`,
    };
    const outcome = await store.reholdJob(job.accountId, job.id, reserve, clock.now());
    if (outcome.ok) return outcome.job;
    if (outcome.code === 'reference_conflict') {
      const remade = await store.getJob(job.accountId, job.id);
      if (remade !== undefined && remade.reservation !== job.reservation) return remade;
    }
    if (outcome.code === 'insufficient_credits') {
      throw new JobFailure(
        `insufficient_credits: the job's credit hold lapsed and ${outcome.needed} credits are no longer available`,
      );
    }
    throw new JobFailure(
      `internal_error: the job's credit hold could not be renewed (${outcome.code})`,
    );
  }

  async function finish(job: JobRecord, reason: string | null = null): Promise<void> {
    const stored = (await store.getJob(job.accountId, job.id)) ?? job;
    if (stored.status !== 'processing') return;
    const missing = stored.totalEmails - stored.processed;
    const failure =
      reason ?? (missing === 0 ? null : `internal_error: ${missing} addresses have no result`);
    const now = clock.now();
    const status = failure === null ? 'completed' : 'failed';
    const finishing = {
      status,
      completedAt: now,
      failureReason: failure,
      purgeAt: now + settings.retentionMs,
    } as const;
    const finished: JobRecord = { ...stored, ...finishing };
    const message = settings.webhooks.message(finished, eventOf(finished, settings.baseUrl), now);
    const outcome = await store.finishJob(stored.accountId, stored.id, finishing, message, now);
    // A job another process finished meanwhile is answered as it stands: it was finished
    // here only if it carries this call's time, and only then is it told of (once).
    if (!outcome.ok || outcome.job.completedAt !== now) return;
    ctx.observer?.onJobProgress?.({ processed: 0, event: status });
    const fields = {
      event: `job.${status}`,
      job_id: stored.id,
      account_id: stored.accountId,
      total_emails: stored.totalEmails,
      processed: outcome.job.processed,
      valid: outcome.job.valid,
      invalid: outcome.job.invalid,
      risky: outcome.job.risky,
      seconds: (now - stored.createdAt) / 1000,
    };
    if (failure === null) ctx.logger.info(fields, 'Batch job completed');
    else ctx.logger.warn({ ...fields, reason: failure }, 'Batch job failed');
    if (message !== undefined) {
      settings.webhooks.deliverDue().catch((error: unknown) => {
        ctx.logger.error(
          { event: 'webhook.error', job_id: stored.id, err: error },
          'Webhooks could not be delivered now; they are tried again on the next round',
        );
      });
    }
  }

  async function verify(
    start: JobRecord,
    items: AsyncIterable<PendingJobItem>,
    signal: AbortSignal,
  ): Promise<JobRecord> {
    let job = start;
    const { accountId } = job;
    const renew = async () => {
      if (job.reservation === null) return true;
      return store.renewHold(accountId, job.reservation, clock.now() + settings.holdTtlMs);
    };
    const renewal = setInterval(
      () => void renew().catch((error: unknown) => holdNotRenewed(job, error)),
      settings.renewEveryMs,
    );
    renewal.unref();
    const landed: Landed[] = [];
    let lastFlush = clock.now();
    /**
     * Results stored per flush: flushSize, or fewer while storing them held the event loop
     * longer than a slice (SQLite writes synchronously: 256 results and their settles took
     * some 30 ms on a busy machine), so that each flush fits in one.
     */
    let flushAt = settings.flushSize;

    const flush = async () => {
      lastFlush = clock.now();
      if (landed.length === 0) return;
      const batch = landed.splice(0);
      for (let tries = 0; ; tries++) {
        const writes = batch.map((item) => writeOf(job, item));
        const write = heldFor(() => store.recordJobResults(accountId, job.id, writes, clock.now()));
        flushAt = fitting(writes.length, write.ms, settings.sliceMs, settings.flushSize);
        const outcome = await write.value;
        if (outcome.ok) {
          job = outcome.job;
          ctx.observer?.onJobProgress?.({ processed: batch.length });
          return;
        }
        const lapsed =
          outcome.code === 'exceeds_reservation' || outcome.code === 'unknown_reservation';
        if (!lapsed || tries > 0) {
          throw new JobFailure(`internal_error: results could not be stored (${outcome.code})`);
        }
        job = await rehold(job);
      }
    };

    try {
      if (!(await renew())) job = await rehold(job);
      // Email and domain filters answered at submission; IP filters are asked inside the
      // engine's per-domain work, once each domain's MX hosts are known.
      const ipFilter = await filters.ipFilter(accountId);
      const positions: number[] = [];
      const method = job.method as MethodName;
      async function* addresses(): AsyncGenerator<string> {
        for await (const item of items) {
          positions.push(item.position);
          yield item.email;
        }
      }

      // The engine is asked only once an address needs it: a job whose every answer was known
      // at submission (test addresses, repeats, filter matches) completes on an engine that
      // cannot run its method, smtp on an offline one, instead of failing.
      const source = addresses();
      const head = await source.next();
      if (head.done !== true) {
        const results = engine.verifyMany(prepended(head.value, source), {
          method,
          concurrency: settings.concurrency,
          perDomain: settings.perDomain,
          retryGreylisted: true,
          signal,
          sliceMs: settings.sliceMs,
          ...optional('ipFilter', ipFilter),
        });
        for await (const { index, verdict } of results) {
          landed.push(landedOf(positions[index] as number, verdict));
          if (landed.length >= flushAt || clock.now() - lastFlush >= settings.flushMs) {
            await flush();
          }
        }
      }
      await flush();
      signal.throwIfAborted();
      return job;
    } catch (error) {
      // Stopped: what landed before the stop is stored, so that it is not verified again.
      if (signal.aborted) await flush().catch(() => undefined);
      throw error;
    } finally {
      clearInterval(renewal);
    }
  }

  /** A renewal that failed: the next one may pass; a lapsed hold is remade before a store. */
  function holdNotRenewed(job: JobRecord, error: unknown): void {
    ctx.logger.warn(
      { event: 'job.hold_not_renewed', job_id: job.id, account_id: job.accountId, err: error },
      "The batch job's credit hold could not be renewed; it is tried again",
    );
  }

  /**
   * Fails the job with the reason its status gives. An error the service did not expect is
   * logged whole here; the reason says only that it happened (a store's or a library's words
   * are for the log, never for the API's clients).
   */
  async function fail(job: JobRecord, error: unknown): Promise<void> {
    const fields = { job_id: job.id, account_id: job.accountId };
    if (!(error instanceof JobFailure)) {
      ctx.logger.error({ event: 'job.error', ...fields, err: error }, 'A batch job cannot go on');
    }
    try {
      await finish(job, failureReason(error));
    } catch (finishing) {
      ctx.logger.error(
        { event: 'job.error', ...fields, err: finishing },
        'A batch job could not be marked failed; it is taken up again on the next start',
      );
      throw finishing;
    }
  }

  return {
    verify,
    finish,
    fail,
    cannotGoOn: (error) => error instanceof JobFailure,
    pending,
    async pendingChunks(job, size) {
      const items: PendingJobItem[] = [];
      for await (const item of pending(job)) items.push(item);
      return chunkByDomain(items, size);
    },
    pendingAt: (job, positions) => store.pendingJobItemsAt(job.id, positions),
    getJob: (accountId, id) => store.getJob(accountId, id),
    processing: () => store.listJobs('processing'),
    async renewHold(job) {
      if (job.reservation === null) return;
      try {
        await store.renewHold(job.accountId, job.reservation, clock.now() + settings.holdTtlMs);
      } catch (error) {
        holdNotRenewed(job, error);
        throw error;
      }
    },
    started(job) {
      ctx.observer?.onJobProgress?.({ processed: 0, event: 'started' });
      ctx.logger.debug(
        { event: 'job.started', job_id: job.id, account_id: job.accountId },
        'Batch job started here',
      );
    },
    renewEveryMs: settings.renewEveryMs,
  };
}

/**
 * The reason a failed job's status and webhook give for `error`: a JobFailure's own words, or
 * for anything unexpected a sentence of ours (its details go to the log).
 */
export function failureReason(error: unknown): string {
  return error instanceof JobFailure
    ? error.message
    : 'internal_error: the job stopped on an unexpected error; the server log has its details';
}

/**
 * How many of what took `ms` for `count` fit in a slice of `sliceMs`: at least 1, at most
 * `most`.
 */
function fitting(count: number, ms: number, sliceMs: number, most: number): number {
  if (ms === 0) return most;
  return Math.max(1, Math.min(most, Math.floor((count * sliceMs) / ms)));
}

/** `first`, then the rest of `rest`: an iterator read once is handed on whole. */
async function* prepended<T>(first: T, rest: AsyncGenerator<T>): AsyncGenerator<T> {
  yield first;
  yield* rest;
}

function landedOf(position: number, verdict: Verdict): Landed {
  // Results we could not get (the unknown family) are given back, not charged; nor are the
  // free ones (an IP filter's match, answered inside the engine's work).
  const charge = !UNKNOWN_REASONS.has(verdict.reason) && !isFree(verdict);
  return { position, ...resultOf(verdict), charge };
}

/** A landed result with the ledger request that settles (or gives back) its credits. */
function writeOf(job: JobRecord, item: Landed): JobResultWrite {
  const { position, record, state } = item;
  if (job.reservation === null) return { position, record, state };
  const ref = jobItemRef(job.id, position);
  const ledger: LedgerRequest = item.charge
    ? { kind: 'settle', ref, reservation: job.reservation, amount: job.cost }
    : { kind: 'release', ref, reservation: job.reservation, amount: job.cost, note: 'unverified' };
  return { position, record, state, ledger };
}
