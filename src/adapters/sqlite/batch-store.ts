import type Database from 'better-sqlite3';
import type {
  BatchStore,
  JobRecord,
  JobResultState,
  JobWriteOutcome,
  LedgerCommit,
  LedgerCommitOutcome,
  LedgerRequest,
  NewJobItem,
  PendingJobItem,
  WebhookMessage,
} from '../../ports/store.js';
import { applyLedgerCommit, type LedgerBook } from '../../store/rules/ledger.js';
import { finalRelease } from '../../store/rules/holds.js';
import { nextSlice } from '../../slices.js';

/** A refused ledger commit, thrown to roll back the results written before it. */
class Refused extends Error {
  constructor(readonly outcome: JobWriteOutcome) {
    super('refused');
  }
}

/** A ledger commit tried and thrown back, to learn whether it would be taken. */
class RolledBack extends Error {
  constructor(readonly outcome: LedgerCommitOutcome) {
    super('rolled back');
  }
}

const COUNTER: Readonly<Record<JobResultState, 'valid' | 'invalid' | 'risky'>> = {
  deliverable: 'valid',
  undeliverable: 'invalid',
  risky: 'risky',
};

/**
 * A job with more items than this is created in slices (createJobInSlices): its rows are
 * written by several transactions, the event loop turning between them.
 */
export const JOB_ITEMS_AT_ONCE = 1_000;
/** Rows a staged job's transaction writes between two looks at the clock. */
const ROWS_PER_CLOCK_READ = 64;
/**
 * What a job left half-created says, should its process die while writing it: it was never
 * announced (its id was never answered) and holds no credits, and is purged after a day.
 */
export const STAGED_JOB_REASON = 'internal_error: the submission did not complete';
const STAGED_JOB_TTL_MS = 86_400_000;

/**
 * The batch part of the SQLite Store. Each write is one IMMEDIATE transaction holding the
 * job's rows and the ledger requests that pay for them, so a SIGKILL leaves both or neither;
 * a large job is created in slices, under the same guarantee (createJobInSlices).
 */
export function createSqliteBatchStore(
  db: Database.Database,
  bookOf: (accountId: string) => LedgerBook,
  guard: <T>(work: () => T) => T,
  sliceMs: number,
): BatchStore {
  const s = guard(() => prepare(db));
  const tx = <A extends unknown[], T>(work: (...args: A) => T) => {
    const run = db.transaction(work);
    return (...args: A): T => guard(() => run.immediate(...args));
  };
  const jobOf = (accountId: string, id: string) => jobFrom(s.job.get(id, accountId));
  const file = (accountId: string, requests: readonly LedgerRequest[], at: number) =>
    applyLedgerCommit(accountId, { requests }, at, bookOf(accountId));

  /** Writes a position's result and its duplicates'; counts per state into `counts`. */
  function place(
    jobId: string,
    position: number,
    record: string,
    state: JobResultState,
    counts: Map<JobResultState, number>,
  ): void {
    const own = s.setResult.run(record, state, jobId, position).changes;
    if (own === 0) return;
    const copies = s.setDuplicates.run(record, state, jobId, position).changes;
    counts.set(state, (counts.get(state) ?? 0) + own + copies);
  }
  function count(jobId: string, counts: Map<JobResultState, number>): void {
    for (const [state, n] of counts) s.count[COUNTER[state]].run(n, n, jobId);
  }

  function insertJob(job: JobRecord): void {
    s.insertJob.run(
      job.id,
      job.accountId,
      job.method,
      job.status,
      job.totalEmails,
      job.billable,
      job.cost,
      job.reservation,
      job.holds,
      job.callbackUrl,
      job.baseUrl ?? null,
      policyColumn(job.callbackPolicy?.allowHttp),
      policyColumn(job.callbackPolicy?.allowPrivateNetworks),
      job.createdAt,
    );
  }

  const createJob = tx(
    (
      job: JobRecord,
      items: Parameters<BatchStore['createJob']>[1],
      commit: LedgerCommit,
      at: number,
    ): JobWriteOutcome => {
      const outcome = applyLedgerCommit(job.accountId, commit, at, bookOf(job.accountId));
      if (!outcome.ok) return outcome as JobWriteOutcome;
      insertJob(job);
      items.forEach((item, position) =>
        s.insertItem.run(
          job.id,
          position,
          item.email,
          item.billable ? 1 : 0,
          item.duplicateOf,
          null,
          null,
        ),
      );
      const counts = new Map<JobResultState, number>();
      items.forEach((item, position) => {
        if (item.result !== null) {
          place(job.id, position, item.result.record, item.result.state, counts);
        }
      });
      count(job.id, counts);
      return { ok: true, job: jobOf(job.accountId, job.id) as JobRecord };
    },
  );

  const tryCommit = tx((accountId: string, commit: LedgerCommit, at: number): never => {
    throw new RolledBack(applyLedgerCommit(accountId, commit, at, bookOf(accountId)));
  });
  /** The ledger's refusal of `commit` now, if it refuses: applied, then rolled back. */
  function refusalNow(accountId: string, commit: LedgerCommit, at: number) {
    try {
      tryCommit(accountId, commit, at);
    } catch (error) {
      if (!(error instanceof RolledBack)) throw error;
      return error.outcome.ok ? undefined : error.outcome;
    }
    return undefined;
  }

  /** The job's row, failed until finishStaged (what a process dying meanwhile leaves). */
  const stageJob = tx((job: JobRecord, at: number) => {
    insertJob({ ...job, status: 'failed', reservation: null, holds: 0 });
    s.finish.run('failed', at, STAGED_JOB_REASON, at + STAGED_JOB_TTL_MS, job.id);
  });

  /**
   * Writes the items from `from` on until `sliceMs` is spent; returns where it stopped. A free
   * item's result, and a duplicate's of such an item, are written with it: `place` (which
   * updates the rows after an item) would miss duplicates not written yet.
   */
  const stageItems = tx(
    (
      jobId: string,
      items: readonly NewJobItem[],
      from: number,
      counts: Map<JobResultState, number>,
    ): number => {
      const started = performance.now();
      let position = from;
      while (position < items.length) {
        const item = items[position] as NewJobItem;
        const result =
          item.result ??
          (item.duplicateOf === null ? null : (items[item.duplicateOf]?.result ?? null));
        s.insertItem.run(
          jobId,
          position,
          item.email,
          item.billable ? 1 : 0,
          item.duplicateOf,
          result?.record ?? null,
          result?.state ?? null,
        );
        if (result !== null) counts.set(result.state, (counts.get(result.state) ?? 0) + 1);
        position++;
        if (position % ROWS_PER_CLOCK_READ === 0 && performance.now() - started >= sliceMs) break;
      }
      return position;
    },
  );

  /** Files the job's ledger commit and makes it the processing job it is; else stores nothing. */
  const finishStaged = tx(
    (
      job: JobRecord,
      commit: LedgerCommit,
      counts: Map<JobResultState, number>,
      at: number,
    ): JobWriteOutcome => {
      const outcome = applyLedgerCommit(job.accountId, commit, at, bookOf(job.accountId));
      if (!outcome.ok) return outcome as JobWriteOutcome;
      s.makeProcessing.run(job.reservation, job.holds, job.id);
      count(job.id, counts);
      return { ok: true, job: jobOf(job.accountId, job.id) as JobRecord };
    },
  );

  /** Deletes a staged job, its rows JOB_ITEMS_AT_ONCE at a time. */
  async function unstage(jobId: string, size: number): Promise<void> {
    for (let below = JOB_ITEMS_AT_ONCE; below < size; below += JOB_ITEMS_AT_ONCE) {
      guard(() => s.deleteItemsBelow.run(jobId, below));
      await nextSlice();
    }
    tx(() => {
      s.deleteItems.run(jobId);
      s.deleteJob.run(jobId);
    })();
  }

  /**
   * Creates a job too large to write in one slice of the event loop (50,000 items took some
   * 200 ms in one transaction, every request waiting) in transactions of a slice each, without
   * giving up what one transaction promised: the job is stored failed first, holding nothing;
   * its items follow, a transaction a slice; the last transaction files the ledger commit and
   * makes it processing. A process that dies before leaves a failed job no one was told of,
   * no credit held; a refused commit deletes what was written and is the answer.
   */
  async function createJobInSlices(
    job: JobRecord,
    items: readonly NewJobItem[],
    commit: LedgerCommit,
    at: number,
  ): Promise<JobWriteOutcome> {
    // Refused now (no credits, a key taken): nothing is written. Taken now, it may still be
    // refused at the end, by what other requests filed meanwhile.
    const refusal = refusalNow(job.accountId, commit, at);
    if (refusal !== undefined) return refusal as JobWriteOutcome;
    stageJob(job, at);
    const counts = new Map<JobResultState, number>();
    let outcome: JobWriteOutcome;
    try {
      for (let position = 0; position < items.length;) {
        await nextSlice();
        position = stageItems(job.id, items, position, counts);
      }
      await nextSlice();
      outcome = finishStaged(job, commit, counts, at);
    } catch (error) {
      await unstage(job.id, items.length).catch(() => undefined);
      throw error;
    }
    if (!outcome.ok) await unstage(job.id, items.length);
    return outcome;
  }

  const recordJobResults = tx(
    (
      accountId: string,
      jobId: string,
      writes: Parameters<BatchStore['recordJobResults']>[2],
      at: number,
    ): JobWriteOutcome => {
      const stored = jobOf(accountId, jobId);
      if (stored === undefined) return { ok: false, code: 'job_not_found' };
      if (stored.status !== 'processing') return { ok: false, code: 'job_finished' };
      // Results first (a position with its result already changes nothing and files nothing),
      // then their ledger requests; a refusal throws, which rolls the results back with it.
      const duplicates = s.anyDuplicate.get(jobId) !== undefined;
      const counts = new Map<JobResultState, number>();
      const requests: LedgerRequest[] = [];
      for (const { position, record, state, ledger } of writes) {
        const own = s.setResult.run(record, state, jobId, position).changes;
        if (own === 0) continue;
        const copies = duplicates ? s.setDuplicates.run(record, state, jobId, position).changes : 0;
        counts.set(state, (counts.get(state) ?? 0) + own + copies);
        if (ledger !== undefined) requests.push(ledger);
      }
      const outcome = file(accountId, requests, at);
      if (!outcome.ok) throw new Refused(outcome as JobWriteOutcome);
      count(jobId, counts);
      return { ok: true, job: jobOf(accountId, jobId) as JobRecord };
    },
  );

  const reholdJob = tx(
    (accountId: string, jobId: string, reserve: LedgerRequest, at: number): JobWriteOutcome => {
      const stored = jobOf(accountId, jobId);
      if (stored === undefined) return { ok: false, code: 'job_not_found' };
      if (stored.status !== 'processing') return { ok: false, code: 'job_finished' };
      const outcome = file(accountId, [reserve], at);
      if (!outcome.ok) return outcome as JobWriteOutcome;
      s.rehold.run(reserve.ref, jobId);
      return { ok: true, job: jobOf(accountId, jobId) as JobRecord };
    },
  );

  // The ledger's reservation upsert keeps a hold's expiry as reserved: renewing is its own write.
  const renewHold = tx((accountId: string, reservation: string, expiresAt: number) => {
    const held = (s.held.get(accountId, reservation) as { held: number } | undefined)?.held ?? 0;
    if (held === 0) return false;
    s.renew.run(expiresAt, accountId, reservation, expiresAt);
    return true;
  });

  const finishJob = tx(
    (
      accountId: string,
      jobId: string,
      finish: Parameters<BatchStore['finishJob']>[2],
      webhook: WebhookMessage | undefined,
      at: number,
    ): JobWriteOutcome => {
      const job = jobOf(accountId, jobId);
      if (job === undefined) return { ok: false, code: 'job_not_found' };
      if (job.status !== 'processing') return { ok: true, job };
      const outcome = file(accountId, finalRelease(bookOf(accountId), job.reservation), at);
      if (!outcome.ok) return outcome as JobWriteOutcome;
      s.finish.run(finish.status, finish.completedAt, finish.failureReason, finish.purgeAt, jobId);
      if (webhook !== undefined) {
        s.insertWebhook.run(
          webhook.id,
          webhook.accountId,
          webhook.jobId,
          webhook.url,
          webhook.payload,
          webhook.status,
          webhook.attempts,
          webhook.nextAttemptAt,
          webhook.lastStatus,
          webhook.lastError,
          webhook.createdAt,
        );
      }
      return { ok: true, job: jobOf(accountId, jobId) as JobRecord };
    },
  );

  const purgeJobs = tx((at: number) => {
    const ids = (s.purgeable.all(at) as { id: string }[]).map((row) => row.id);
    for (const id of ids) {
      s.deleteWebhooks.run(id);
      s.deleteItems.run(id);
      s.deleteJob.run(id);
    }
    return ids.length;
  });

  return {
    async createJob(job, items, commit, at) {
      if (items.length > JOB_ITEMS_AT_ONCE) return createJobInSlices(job, items, commit, at);
      return createJob(job, items, commit, at);
    },
    async getJob(accountId, id) {
      return guard(() => jobOf(accountId, id));
    },
    async listJobs(status) {
      return guard(() => s.jobsIn.all(status).map((row) => jobFrom(row) as JobRecord));
    },
    async pendingJobItems(jobId, afterPosition, limit) {
      return guard(() => s.pending.all(jobId, afterPosition, limit) as PendingJobItem[]);
    },
    async pendingJobItemsAt(jobId, positions) {
      return guard(() => s.pendingAt.all(jobId, JSON.stringify(positions)) as PendingJobItem[]);
    },
    async recordJobResults(accountId, jobId, writes, at) {
      try {
        return recordJobResults(accountId, jobId, writes, at);
      } catch (error) {
        if (error instanceof Refused) return error.outcome;
        throw error;
      }
    },
    async reholdJob(accountId, jobId, reserve, at) {
      return reholdJob(accountId, jobId, reserve, at);
    },
    async renewHold(accountId, reservation, expiresAt) {
      return renewHold(accountId, reservation, expiresAt);
    },
    async finishJob(accountId, jobId, finish, webhook, at) {
      return finishJob(accountId, jobId, finish, webhook, at);
    },
    async jobResults(jobId, afterPosition, limit) {
      return guard(() =>
        (
          s.results.all(jobId, afterPosition, limit) as {
            position: number;
            input: string;
            record: string;
            duplicate: number;
          }[]
        ).map((row) => ({ ...row, duplicate: row.duplicate === 1 })),
      );
    },
    async purgeJobs(at) {
      return purgeJobs(at);
    },
    async dueWebhooks(at, limit) {
      return guard(() => s.due.all(at, limit).map(webhookFrom));
    },
    async jobWebhooks(jobId) {
      return guard(() => s.webhooksOf.all(jobId).map(webhookFrom));
    },
    async listWebhooks(accountId, query) {
      const limit = Math.max(0, query.limit);
      return guard(() =>
        (query.status === undefined
          ? s.webhooksOfAccount.all(accountId, limit)
          : s.webhooksOfAccountIn.all(accountId, query.status, limit)
        ).map(webhookFrom),
      );
    },
    async updateWebhook(id, changes, leasedUntil) {
      const values = [
        changes.status,
        changes.attempts,
        changes.nextAttemptAt,
        changes.lastStatus,
        changes.lastError,
        id,
      ];
      return guard(
        () =>
          (leasedUntil === undefined
            ? s.updateWebhook.run(...values)
            : s.updateLeasedWebhook.run(...values, leasedUntil)
          ).changes === 1,
      );
    },
    async leaseWebhook(id, expectedNextAttemptAt, until) {
      return guard(() => s.leaseWebhook.run(until, id, expectedNextAttemptAt).changes === 1);
    },
  };
}

function prepare(db: Database.Database) {
  const counter = (column: 'valid' | 'invalid' | 'risky') =>
    db.prepare(
      `UPDATE batch_jobs SET processed = processed + ?, ${column} = ${column} + ? WHERE id = ?`,
    );
  return {
    job: db.prepare('SELECT * FROM batch_jobs WHERE id = ? AND account_id = ?'),
    jobsIn: db.prepare('SELECT * FROM batch_jobs WHERE status = ? ORDER BY created_at, id'),
    insertJob: db.prepare(
      `INSERT INTO batch_jobs (id, account_id, method, status, total_emails, billable, cost,
         reservation, holds, callback_url, base_url, allow_http_callbacks,
         allow_private_callbacks, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertItem: db.prepare(
      `INSERT INTO batch_items (job_id, position, email, billable, duplicate_of, record, state)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ),
    anyDuplicate: db.prepare(
      `SELECT 1 FROM batch_items INDEXED BY batch_items_duplicates
       WHERE job_id = ? AND duplicate_of IS NOT NULL LIMIT 1`,
    ),
    setResult: db.prepare(
      `UPDATE batch_items SET record = ?, state = ?
       WHERE job_id = ? AND position = ? AND record IS NULL`,
    ),
    // Without statistics the planner takes the primary key's job_id prefix and scans the whole
    // job for each result (quadratic: 8,000 addresses took 3.7 s); the partial index is named.
    setDuplicates: db.prepare(
      `UPDATE batch_items INDEXED BY batch_items_duplicates SET record = ?, state = ?
       WHERE job_id = ? AND duplicate_of = ? AND duplicate_of IS NOT NULL AND record IS NULL`,
    ),
    count: { valid: counter('valid'), invalid: counter('invalid'), risky: counter('risky') },
    pending: db.prepare(
      `SELECT position, email FROM batch_items
       WHERE job_id = ? AND position > ? AND billable = 1 AND record IS NULL
       ORDER BY position LIMIT ?`,
    ),
    // The positions arrive as one JSON array: a statement per position would be a round trip each.
    pendingAt: db.prepare(
      `SELECT position, email FROM batch_items
       WHERE job_id = ? AND position IN (SELECT value FROM json_each(?))
         AND billable = 1 AND record IS NULL
       ORDER BY position`,
    ),
    results: db.prepare(
      `SELECT position, email AS input, record, duplicate_of IS NOT NULL AS duplicate FROM batch_items
       WHERE job_id = ? AND position > ? AND record IS NOT NULL ORDER BY position LIMIT ?`,
    ),
    held: db.prepare('SELECT held FROM reservations WHERE account_id = ? AND ref = ?'),
    renew: db.prepare(
      `UPDATE reservations SET expires_at = ?
       WHERE account_id = ? AND ref = ? AND (expires_at IS NULL OR expires_at < ?)`,
    ),
    rehold: db.prepare('UPDATE batch_jobs SET reservation = ?, holds = holds + 1 WHERE id = ?'),
    finish: db.prepare(
      `UPDATE batch_jobs SET status = ?, completed_at = ?, failure_reason = ?, purge_at = ?
       WHERE id = ?`,
    ),
    purgeable: db.prepare('SELECT id FROM batch_jobs WHERE purge_at IS NOT NULL AND purge_at <= ?'),
    deleteWebhooks: db.prepare('DELETE FROM batch_webhooks WHERE job_id = ?'),
    deleteItems: db.prepare('DELETE FROM batch_items WHERE job_id = ?'),
    deleteItemsBelow: db.prepare('DELETE FROM batch_items WHERE job_id = ? AND position < ?'),
    makeProcessing: db.prepare(
      `UPDATE batch_jobs SET status = 'processing', completed_at = NULL, failure_reason = NULL,
         purge_at = NULL, reservation = ?, holds = ? WHERE id = ?`,
    ),
    deleteJob: db.prepare('DELETE FROM batch_jobs WHERE id = ?'),
    insertWebhook: db.prepare(
      `INSERT INTO batch_webhooks (id, account_id, job_id, url, payload, status, attempts,
         next_attempt_at, last_status, last_error, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    due: db.prepare(
      `SELECT * FROM batch_webhooks WHERE status = 'pending' AND next_attempt_at <= ?
       ORDER BY next_attempt_at LIMIT ?`,
    ),
    webhooksOf: db.prepare('SELECT * FROM batch_webhooks WHERE job_id = ? ORDER BY created_at, id'),
    webhooksOfAccount: db.prepare(
      `SELECT * FROM batch_webhooks WHERE account_id = ?
       ORDER BY created_at DESC, id DESC LIMIT ?`,
    ),
    webhooksOfAccountIn: db.prepare(
      `SELECT * FROM batch_webhooks WHERE account_id = ? AND status = ?
       ORDER BY created_at DESC, id DESC LIMIT ?`,
    ),
    leaseWebhook: db.prepare(
      `UPDATE batch_webhooks SET next_attempt_at = ?
       WHERE id = ? AND status = 'pending' AND next_attempt_at = ?`,
    ),
    updateWebhook: db.prepare(
      `UPDATE batch_webhooks
       SET status = ?, attempts = ?, next_attempt_at = ?, last_status = ?, last_error = ?
       WHERE id = ?`,
    ),
    // An attempt's outcome, only while the message is still under the attempt's lease.
    updateLeasedWebhook: db.prepare(
      `UPDATE batch_webhooks
       SET status = ?, attempts = ?, next_attempt_at = ?, last_status = ?, last_error = ?
       WHERE id = ? AND status = 'pending' AND next_attempt_at = ?`,
    ),
  };
}

type Row = Record<string, unknown>;

/** A policy flag as stored: 1 or 0, NULL for a job that came without one. */
function policyColumn(flag: boolean | undefined): number | null {
  return flag === undefined ? null : flag ? 1 : 0;
}

function jobFrom(row: unknown): JobRecord | undefined {
  if (row === undefined) return undefined;
  const r = row as Row;
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    method: r.method as string,
    status: r.status as JobRecord['status'],
    totalEmails: r.total_emails as number,
    billable: r.billable as number,
    cost: r.cost as number,
    reservation: r.reservation as string | null,
    holds: r.holds as number,
    callbackUrl: r.callback_url as string | null,
    // A row stored before these columns (NULL policy): the reading process decides.
    ...(r.allow_http_callbacks === null || r.allow_http_callbacks === undefined
      ? {}
      : {
          baseUrl: r.base_url as string | null,
          callbackPolicy: {
            allowHttp: r.allow_http_callbacks === 1,
            allowPrivateNetworks: r.allow_private_callbacks === 1,
          },
        }),
    processed: r.processed as number,
    valid: r.valid as number,
    invalid: r.invalid as number,
    risky: r.risky as number,
    createdAt: r.created_at as number,
    completedAt: r.completed_at as number | null,
    failureReason: r.failure_reason as string | null,
    purgeAt: r.purge_at as number | null,
  };
}

function webhookFrom(row: unknown): WebhookMessage {
  const r = row as Row;
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    jobId: r.job_id as string,
    url: r.url as string,
    payload: r.payload as string,
    status: r.status as WebhookMessage['status'],
    attempts: r.attempts as number,
    nextAttemptAt: r.next_attempt_at as number,
    lastStatus: (r.last_status ?? null) as number | null,
    lastError: r.last_error as string | null,
    createdAt: r.created_at as number,
  };
}
