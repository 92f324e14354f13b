import { VERIFY_MANY_CONCURRENCY, VERIFY_MANY_PER_DOMAIN } from '../../engine/verify-many.js';
import { countOption, sliceMsOption } from '../../slices.js';
import type { JobRecord, WebhookMessage } from '../../ports/store.js';
import type { WebhookSender } from '../../ports/webhook.js';
import type { AccountRef } from '../auth.js';
import type { ServiceContext } from '../context.js';
import type { Filters } from '../filters.js';
import { ServiceError } from '../service-error.js';
import { requireId, resultsFormatOf } from '../request-fields.js';
import { answering, optionalObject, requireAccountRef } from '../validate.js';
import {
  baseUrlOf,
  notCompleted,
  chooseBaseUrl,
  type BaseUrlChoice,
  statusOf,
  streamResults,
  type BatchResults,
  type BatchStatus,
  type ResultsFormat,
} from './results.js';
import { createJobWork } from './job-work.js';
import type { BatchRunnerFactory } from '../../ports/batch-runner.js';
import { inProcessRunner } from './runner.js';
import {
  createSubmit,
  type BatchCreated,
  type NewBatch,
  type SubmitBatchOptions,
} from './submit.js';
import {
  createWebhookDispatcher,
  WEBHOOK_RETRY_SCHEDULE_MS,
  WEBHOOK_TIMEOUT_MS,
} from './webhooks.js';

export interface BatchOptions {
  /**
   * Where the API is served (`https://api.example.com/`), for absolute `download_url`s: a job
   * submitted here keeps it, unless the submission names its own (the HTTP handler passes
   * its `baseUrl`). With none, `download_url` is the path alone. Jobs stored before bases were
   * kept with them are read on this one.
   */
  readonly baseUrl?: string;
  /** How long a finished job's results are kept. Default 7 days. */
  readonly retentionMs?: number;
  /**
   * Take http:// callback URLs, not only https://. Default false. Like allowPrivateNetworks,
   * decided at submission and kept with the job: the process that sends its webhook (a
   * worker, say) applies the policy of the one that took it, whatever its own.
   */
  readonly allowHttpCallbacks?: boolean;
  /**
   * Let callbacks reach loopback and private networks (tests, intranets). Default false: the
   * SSRF guard refuses them at submission and when sending.
   */
  readonly allowPrivateNetworks?: boolean;
  /**
   * Sends webhooks. Default: the service's default sender (createService's: node:http(s) with
   * the SSRF guard, adapters/node/webhook.ts).
   */
  readonly webhookSender?: WebhookSender;
  /** Delays before each retry of a webhook. Default WEBHOOK_RETRY_SCHEDULE_MS (27.6 h). */
  readonly webhookRetryScheduleMs?: readonly number[];
  readonly webhookTimeoutMs?: number;
  /** How often `start()`ed services look for due webhooks and expired jobs. Default 5 s. */
  readonly pollMs?: number;
  /** Domains verified at once per job. Default VERIFY_MANY_CONCURRENCY (50). */
  readonly concurrency?: number;
  readonly perDomain?: number;
  /** Jobs run at once (by the in-process runner). Default 2. */
  readonly jobsAtOnce?: number;
  /**
   * Where jobs run. Default: in this process, `jobsAtOnce` at a time. `mailverdict/bullmq`'s
   * runner spreads them over worker processes sharing a Redis store.
   */
  readonly runner?: BatchRunnerFactory;
  /** A job's credit hold lasts this long unless its runner renews it. Default 15 minutes. */
  readonly holdTtlMs?: number;
  /** How often a runner renews its hold. Default 1 minute. */
  readonly renewEveryMs?: number;
  /** Results stored and settled per transaction. Default 256. */
  readonly flushSize?: number;
  /** ...or once this long has passed since the last store, so progress shows. Default 1 s. */
  readonly flushMs?: number;
  /**
   * How long a job's verification, a submission's checks or a download's serialization hold
   * the event loop at a time, in milliseconds, before requests are served again. Default
   * SLICE_MS (5).
   */
  readonly sliceMs?: number;
}

export const BATCH_RETENTION_MS = 7 * 86_400_000;
export const BATCH_HOLD_TTL_MS = 15 * 60_000;
export const BATCH_RENEW_EVERY_MS = 60_000;
export const BATCH_POLL_MS = 5_000;

/** The batch endpoints and the work behind them (docs/architecture.md, "Batch path"). */
export interface Batches {
  /** `POST /v1/verify`: stores the job, reserves its credits, starts it. */
  submitBatch(
    caller: AccountRef,
    input: NewBatch,
    options?: SubmitBatchOptions,
  ): Promise<BatchCreated>;
  /**
   * `GET /v1/verify/{id}`. Its `download_url` is built on the base URL kept with the job;
   * `options` serve only a job stored before bases were kept, which is read on the base
   * chooseBaseUrl picks: as a job submitted with them would be.
   */
  batchStatus(caller: AccountRef, id: string, options?: BaseUrlChoice): Promise<BatchStatus>;
  /**
   * `POST /v1/verify/{id}/webhook`: queues the finished job's webhook again, due now, for a
   * new round of attempts (the same webhook-id: a receiver that has it may drop it), and
   * answers the job's status. 409 `conflict` for a job submitted without a callback_url,
   * `batch_not_completed` for one still processing.
   */
  redeliverWebhook(caller: AccountRef, id: string, options?: BaseUrlChoice): Promise<BatchStatus>;
  /** `GET /v1/verify/{id}/results`: a completed job's records, streamed in input order. */
  batchResults(
    caller: AccountRef,
    id: string,
    options?: { format?: ResultsFormat },
  ): Promise<BatchResults>;
}

/** Starting and stopping the background work: resume, webhooks, retention. */
export interface BatchWork {
  /** Resumes jobs left processing, then delivers due webhooks and purges on a timer. */
  start(): Promise<{ resumed: number }>;
  /** Stops runners (their jobs resume on the next start) and timers. */
  stop(): Promise<void>;
  /** Resolves once no job is running (tests, graceful shutdown). */
  idle(): Promise<void>;
  /** Sends the webhooks due now; resolves with how many were attempted. */
  deliverWebhooks(): Promise<number>;
  /** Deletes finished jobs past their retention; resolves with how many. */
  purgeExpired(): Promise<number>;
}

/** Makes the sender used when `webhookSender` is not given, under the batch's SSRF policy. */
export type DefaultWebhookSender = (policy: { allowPrivateNetworks: boolean }) => WebhookSender;

export function createBatches(
  ctx: ServiceContext,
  filters: Pick<Filters, 'ipFilter'>,
  options: BatchOptions = {},
  defaultSender: DefaultWebhookSender,
): Batches & { work: BatchWork } {
  const { store, clock } = ctx;
  const configuredBaseUrl = options.baseUrl === undefined ? undefined : baseUrlOf(options.baseUrl);
  const baseUrl = configuredBaseUrl ?? null;
  const callbackPolicy = {
    allowHttp: options.allowHttpCallbacks === true,
    allowPrivateNetworks: options.allowPrivateNetworks === true,
  };
  // The options checked before anything starts: a bad one is a RangeError at creation.
  const sliceMs = sliceMsOption(options.sliceMs, 'batch.sliceMs');
  const concurrency = countOption(
    options.concurrency,
    'batch.concurrency',
    VERIFY_MANY_CONCURRENCY,
  );
  const perDomain = countOption(options.perDomain, 'batch.perDomain', VERIFY_MANY_PER_DOMAIN);
  const jobsAtOnce = countOption(options.jobsAtOnce, 'batch.jobsAtOnce', 2);
  const webhooks = createWebhookDispatcher(ctx, {
    sender:
      options.webhookSender ??
      defaultSender({ allowPrivateNetworks: callbackPolicy.allowPrivateNetworks }),
    callbackPolicy,
    retryScheduleMs: options.webhookRetryScheduleMs ?? WEBHOOK_RETRY_SCHEDULE_MS,
    timeoutMs: options.webhookTimeoutMs ?? WEBHOOK_TIMEOUT_MS,
  });
  const work = createJobWork(ctx, filters, {
    concurrency,
    perDomain,
    holdTtlMs: options.holdTtlMs ?? BATCH_HOLD_TTL_MS,
    renewEveryMs: options.renewEveryMs ?? BATCH_RENEW_EVERY_MS,
    flushSize: options.flushSize ?? 256,
    flushMs: options.flushMs ?? 1_000,
    sliceMs,
    retentionMs: options.retentionMs ?? BATCH_RETENTION_MS,
    baseUrl,
    webhooks,
  });
  const runner = (options.runner ?? inProcessRunner({ jobsAtOnce }))(work);
  const submit = createSubmit(ctx, {
    baseUrl,
    callbackPolicy,
    holdTtlMs: options.holdTtlMs ?? BATCH_HOLD_TTL_MS,
    sliceMs,
    start: (job) => runner.start(job),
  });

  /** A job's webhook in the outbox (the latest, should there be more), if it has one yet. */
  async function webhookOf(job: JobRecord): Promise<WebhookMessage | undefined> {
    if (job.callbackUrl === null) return undefined;
    return (await store.jobWebhooks(job.id)).at(-1);
  }

  /** The caller's own job, or 404: another account's id is as unknown as a made-up one. */
  async function jobFor(caller: unknown, id: unknown) {
    const accountId = requireAccountRef(caller);
    const jobId = requireId(id);
    const job = await store.getJob(accountId, jobId);
    if (job === undefined) throw new ServiceError('not_found', `No batch ${jobId}.`);
    return job;
  }

  let timer: ReturnType<typeof setInterval> | undefined;
  let stopping = new AbortController();
  /** The round of background work under way, which stop() waits for. */
  let ticking: Promise<void> | undefined;
  const tick = () => {
    ticking ??= (async () => {
      try {
        await store.purgeJobs(clock.now());
        await webhooks.deliverDue(stopping.signal);
      } catch (error) {
        tickFailed(error);
      } finally {
        ticking = undefined;
      }
    })();
  };
  /** A round of background work that failed (the store away, say): the next one tries again. */
  const tickFailed = (error: unknown) => {
    ctx.logger.error(
      { event: 'background.error', err: error },
      'Background work (webhook delivery, purging finished jobs) failed; it is tried again',
    );
  };

  return {
    submitBatch: (caller, input, submitOptions) =>
      answering(() => submit(caller, input, submitOptions)),
    batchStatus: (caller, id, statusOptions) =>
      answering(async () => {
        const job = await jobFor(caller, id);
        const fields = optionalObject(statusOptions, 'options');
        const base = chooseBaseUrl(fields, baseUrl);
        return statusOf(job, base, await webhookOf(job));
      }),
    redeliverWebhook: (caller, id, statusOptions) =>
      answering(async () => {
        const job = await jobFor(caller, id);
        const fields = optionalObject(statusOptions, 'options');
        const base = chooseBaseUrl(fields, baseUrl);
        if (job.callbackUrl === null) {
          throw new ServiceError(
            'conflict',
            `Batch ${job.id} was submitted without a callback_url: it has no webhook to deliver.`,
          );
        }
        if (job.status === 'processing') throw notCompleted(job);
        const message = await webhookOf(job);
        if (message === undefined) {
          throw new ServiceError('internal_error', `Batch ${job.id} has no webhook in the outbox.`);
        }
        const queued = await webhooks.redeliver(message);
        // Sent now by a process whose background work runs; else by whichever process's does
        // next (a serve or worker sharing the store), within its poll.
        if (timer !== undefined) tick();
        return statusOf(job, base, queued);
      }),
    batchResults: (caller, id, resultOptions) =>
      answering(async () => {
        const job = await jobFor(caller, id);
        const fields = optionalObject(resultOptions, 'options');
        const format = resultsFormatOf(fields.format);
        if (job.status !== 'completed') throw notCompleted(job);
        return streamResults(store, job, format, { sliceMs });
      }),
    work: {
      async start() {
        await store.purgeJobs(clock.now());
        for (const job of await store.listJobs('processing')) {
          ctx.logger.info(
            {
              event: 'job.resumed',
              job_id: job.id,
              account_id: job.accountId,
              total_emails: job.totalEmails,
              processed: job.processed,
            },
            'Batch job taken up again: what was verified before is kept',
          );
        }
        const resumed = await runner.resume();
        if (timer === undefined) {
          timer = setInterval(tick, options.pollMs ?? BATCH_POLL_MS);
          timer.unref();
          tick();
        }
        return { resumed };
      },
      async stop() {
        if (timer !== undefined) clearInterval(timer);
        timer = undefined;
        stopping.abort();
        stopping = new AbortController();
        // A round under way ends before the store may be closed under it.
        await ticking;
        await runner.stop();
      },
      idle: () => runner.idle(),
      deliverWebhooks: () => webhooks.deliverDue(),
      purgeExpired: () => store.purgeJobs(clock.now()),
    },
  };
}
