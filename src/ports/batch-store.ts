import type { LedgerCommit, LedgerCommitOutcome, LedgerRequest } from './ledger.js';

/** Where a batch job stands: processing, then completed or failed. */
export const JOB_STATUSES = ['processing', 'completed', 'failed'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** The state of one result, as the job's counters count it (valid, invalid, risky). */
export type JobResultState = 'deliverable' | 'undeliverable' | 'risky';

/**
 * Which callbacks a job may have, decided by the process that took it: https only or http
 * too, and public addresses only or private networks too (the webhook's SSRF guard).
 */
export interface JobCallbackPolicy {
  readonly allowHttp: boolean;
  readonly allowPrivateNetworks: boolean;
}

/** A batch job as stored: its request, its hold and its progress. */
export interface JobRecord {
  readonly id: string;
  readonly accountId: string;
  readonly method: string;
  readonly status: JobStatus;
  readonly totalEmails: number;
  /** Addresses charged for: not test addresses, filter matches or duplicates. */
  readonly billable: number;
  /** Credits per billable address. */
  readonly cost: number;
  /** The ledger reservation holding the job's credits now; null when nothing is billable. */
  readonly reservation: string | null;
  /** Reservations made so far: 1 at submission, one more each time a lapsed hold is remade. */
  readonly holds: number;
  readonly callbackUrl: string | null;
  /**
   * Decided at submission and kept with the job, so that every process that later touches it
   * (an API process, a worker, a restarted one) agrees: the public base URL `download_url` is
   * built on (ending in `/`), or null when none was configured (`download_url` is then a
   * path), and the callback policy. Absent on jobs stored before they were kept: those take
   * the settings of the process that reads them.
   */
  readonly baseUrl?: string | null;
  readonly callbackPolicy?: JobCallbackPolicy;
  /** Positions with a result (duplicates included): valid + invalid + risky. */
  readonly processed: number;
  readonly valid: number;
  readonly invalid: number;
  readonly risky: number;
  readonly createdAt: number;
  readonly completedAt: number | null;
  readonly failureReason: string | null;
  /** Epoch ms after which the job and its results are purged; set when it finishes. */
  readonly purgeAt: number | null;
}

/** One result of a job: the record as it is downloaded (JSON text) and its state. */
export interface JobResult {
  readonly record: string;
  readonly state: JobResultState;
}

/** One address of a new job, in input order. */
export interface NewJobItem {
  readonly email: string;
  /** Charged for: the runner verifies it and settles its cost. */
  readonly billable: boolean;
  /** An earlier position with the same address: this one takes that one's result. */
  readonly duplicateOf: number | null;
  /** A result known at submission (a test address, a filter match), else null. */
  readonly result: JobResult | null;
}

/** An address the runner still has to verify. */
export interface PendingJobItem {
  readonly position: number;
  readonly email: string;
}

/** A result the runner stores, with the ledger request that pays for it, in one write. */
export interface JobResultWrite extends JobResult {
  readonly position: number;
  /** A settle (or a release, for a result we could not get) against the job's reservation. */
  readonly ledger?: LedgerRequest;
}

/** A stored result as downloaded. */
export interface JobResultRow {
  readonly position: number;
  /** The address as submitted at this position (a duplicate's own spelling, not its first's). */
  readonly input: string;
  readonly record: string;
  readonly duplicate: boolean;
}

/** Where a webhook's delivery stands: pending (to be tried), delivered, or failed (given up). */
export const WEBHOOK_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];

/** One webhook in the durable outbox (docs/architecture.md, "Batch path"). */
export interface WebhookMessage {
  /** The `webhook-id`: the same on every attempt, so a receiver can drop repeats. */
  readonly id: string;
  readonly accountId: string;
  readonly jobId: string;
  readonly url: string;
  /** The JSON body, exactly as signed and sent. */
  readonly payload: string;
  readonly status: WebhookStatus;
  /** Attempts since it was queued (or queued again by a redelivery). */
  readonly attempts: number;
  readonly nextAttemptAt: number;
  /** The HTTP status the last attempt was answered with; null without an answer. */
  readonly lastStatus: number | null;
  /** Why the last attempt was not a delivery; null after a delivery or before any attempt. */
  readonly lastError: string | null;
  readonly createdAt: number;
}

export type WebhookChanges = Pick<
  WebhookMessage,
  'status' | 'attempts' | 'nextAttemptAt' | 'lastStatus' | 'lastError'
>;

/** Which webhooks of an account to list. */
export interface WebhookQuery {
  /** Only those in this status. */
  readonly status?: WebhookStatus;
  /** At most this many, newest first. */
  readonly limit: number;
}

/** How a job finishes. */
export interface JobFinish {
  readonly status: Exclude<JobStatus, 'processing'>;
  readonly completedAt: number;
  readonly failureReason: string | null;
  readonly purgeAt: number;
}

export type JobWriteOutcome =
  | { readonly ok: true; readonly job: JobRecord }
  | Exclude<LedgerCommitOutcome, { ok: true }>
  | { readonly ok: false; readonly code: 'job_not_found' }
  /** The job is completed or failed: it takes no more results and no new hold. */
  | { readonly ok: false; readonly code: 'job_finished' };

/**
 * The batch side of the Store port: jobs, their results in input order, and
 * the webhook outbox. Every write that moves credits files its ledger requests in the same
 * transaction as the job's rows, so a crash leaves either both or neither.
 */
export interface BatchStore {
  /**
   * Stores a job, its items (results of free items included) and its ledger commit (the
   * reserve, an idempotency claim) in one transaction; a refused commit stores nothing and is
   * the answer.
   */
  createJob(
    job: JobRecord,
    items: readonly NewJobItem[],
    commit: LedgerCommit,
    at: number,
  ): Promise<JobWriteOutcome>;
  /** The job, only for its own account. */
  getJob(accountId: string, id: string): Promise<JobRecord | undefined>;
  /** Jobs in `status`, oldest first (the runner resumes the processing ones at start). */
  listJobs(status: JobStatus): Promise<readonly JobRecord[]>;
  /** Billable items without a result, by position after `afterPosition`, at most `limit`. */
  pendingJobItems(
    jobId: string,
    afterPosition: number,
    limit: number,
  ): Promise<readonly PendingJobItem[]>;
  /**
   * Billable items among `positions` that have no result yet, by position: a worker retrying
   * a chunk of scattered positions (one domain's addresses) skips what is already stored.
   */
  pendingJobItemsAt(
    jobId: string,
    positions: readonly number[],
  ): Promise<readonly PendingJobItem[]>;
  /**
   * Stores results and their ledger requests in one transaction, all or none. A position that
   * has its result already is skipped with its ledger request (a replay writes nothing); the
   * duplicates of a position take its result in the same write. Counters follow.
   */
  recordJobResults(
    accountId: string,
    jobId: string,
    writes: readonly JobResultWrite[],
    at: number,
  ): Promise<JobWriteOutcome>;
  /** Files a new reserve for the job and makes it the job's reservation, together. */
  reholdJob(
    accountId: string,
    jobId: string,
    reserve: LedgerRequest,
    at: number,
  ): Promise<JobWriteOutcome>;
  /**
   * Moves a live hold's expiry to `expiresAt` (never earlier than it was): a long job's
   * runner renews its hold while it works. False when nothing is held any more.
   */
  renewHold(accountId: string, reservation: string, expiresAt: number): Promise<boolean>;
  /**
   * Finishes a processing job: releases what its reservation still holds (under
   * `<reservation>:release`), sets its status, and queues its webhook, in one transaction.
   * A job finished already is answered as it stands, changing nothing.
   */
  finishJob(
    accountId: string,
    jobId: string,
    finish: JobFinish,
    webhook: WebhookMessage | undefined,
    at: number,
  ): Promise<JobWriteOutcome>;
  /** Results by position after `afterPosition`, at most `limit`. */
  jobResults(jobId: string, afterPosition: number, limit: number): Promise<readonly JobResultRow[]>;
  /** Deletes finished jobs whose retention ended at `at`, with their items; resolves the count. */
  purgeJobs(at: number): Promise<number>;
  /** Pending webhooks due at `at`, soonest first. */
  dueWebhooks(at: number, limit: number): Promise<readonly WebhookMessage[]>;
  /** A job's webhooks, oldest first. */
  jobWebhooks(jobId: string): Promise<readonly WebhookMessage[]>;
  /** An account's webhooks, newest first (by createdAt, then id), as `query` asks. */
  listWebhooks(accountId: string, query: WebhookQuery): Promise<readonly WebhookMessage[]>;
  /**
   * Changes a webhook, and resolves whether it did. With `leasedUntil`, only while the message
   * is still pending under that lease (its nextAttemptAt, as leaseWebhook set it): an attempt's
   * outcome is not written over a redelivery queued meanwhile. An unknown id changes nothing.
   */
  updateWebhook(id: string, changes: WebhookChanges, leasedUntil?: number): Promise<boolean>;
  /**
   * Takes a due webhook for one attempt: when the message is pending and its nextAttemptAt is
   * still `expectedNextAttemptAt` (as read from dueWebhooks), moves it to `until` and resolves
   * true. Several processes share one outbox; only the one whose lease took sends, and a
   * sender that dies mid-attempt leaves the message due again at `until`.
   */
  leaseWebhook(id: string, expectedNextAttemptAt: number, until: number): Promise<boolean>;
}
