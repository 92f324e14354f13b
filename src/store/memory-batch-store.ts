import type {
  BatchStore,
  JobRecord,
  JobResult,
  JobResultState,
  JobWriteOutcome,
  LedgerRequest,
  WebhookMessage,
} from '../ports/store.js';
import { finalRelease, renewIn } from './rules/holds.js';
import { applyLedgerCommit, type LedgerBook } from './rules/ledger.js';
import { StoreError } from './rules/store-error.js';
import { listed, pendingAt } from './rules/webhooks.js';

interface MemoryItem {
  readonly email: string;
  readonly billable: boolean;
  readonly duplicateOf: number | null;
  result: JobResult | null;
}

interface MemoryJob {
  job: JobRecord;
  readonly items: MemoryItem[];
  /** Position -> the later positions that repeat it. */
  readonly duplicates: Map<number, number[]>;
}

const COUNTER: Readonly<Record<JobResultState, 'valid' | 'invalid' | 'risky'>> = {
  deliverable: 'valid',
  undeliverable: 'invalid',
  risky: 'risky',
};

/** What the memory store lends its batch part: its open check and an account's ledger book. */
export interface MemoryBatchHost {
  open(): void;
  ledgerBook(accountId: string): LedgerBook;
}

/**
 * The batch part of the memory Store (jobs, results, webhook outbox). Like the rest of the
 * memory store every operation runs to its end without awaiting, so each is atomic.
 */
export function createMemoryBatchStore(host: MemoryBatchHost): BatchStore {
  const jobs = new Map<string, MemoryJob>();
  const webhooks = new Map<string, WebhookMessage>();

  const jobOf = (accountId: string, id: string): MemoryJob | undefined => {
    host.open();
    const found = jobs.get(id);
    return found !== undefined && found.job.accountId === accountId ? found : undefined;
  };
  const counted = (job: JobRecord, state: JobResultState, count: number): JobRecord => ({
    ...job,
    processed: job.processed + count,
    [COUNTER[state]]: job[COUNTER[state]] + count,
  });

  /** Gives a position its result and its duplicates theirs; the job with its counters. */
  function place(found: MemoryJob, position: number, result: JobResult): JobRecord {
    let job = found.job;
    const item = found.items[position];
    if (item === undefined || item.result !== null) return job;
    item.result = result;
    job = counted(job, result.state, 1);
    for (const later of found.duplicates.get(position) ?? []) {
      const duplicate = found.items[later] as MemoryItem;
      if (duplicate.result !== null) continue;
      duplicate.result = result;
      job = counted(job, result.state, 1);
    }
    return job;
  }

  function file(accountId: string, requests: readonly LedgerRequest[], at: number) {
    return applyLedgerCommit(accountId, { requests }, at, host.ledgerBook(accountId));
  }

  return {
    async createJob(job, items, commit, at) {
      host.open();
      if (jobs.has(job.id)) throw new StoreError('constraint', `Job ${job.id} exists.`);
      const outcome = applyLedgerCommit(job.accountId, commit, at, host.ledgerBook(job.accountId));
      if (!outcome.ok) return outcome as JobWriteOutcome;
      const found: MemoryJob = {
        job: { ...job, processed: 0, valid: 0, invalid: 0, risky: 0 },
        items: items.map((item) => ({ ...item, result: null })),
        duplicates: new Map(),
      };
      items.forEach((item, position) => {
        if (item.duplicateOf === null) return;
        const list = found.duplicates.get(item.duplicateOf);
        if (list === undefined) found.duplicates.set(item.duplicateOf, [position]);
        else list.push(position);
      });
      items.forEach((item, position) => {
        if (item.result !== null) found.job = place(found, position, item.result);
      });
      jobs.set(job.id, found);
      return { ok: true, job: found.job };
    },
    async getJob(accountId, id) {
      return jobOf(accountId, id)?.job;
    },
    async listJobs(status) {
      host.open();
      return [...jobs.values()]
        .map((found) => found.job)
        .filter((job) => job.status === status)
        .sort((a, b) => a.createdAt - b.createdAt);
    },
    async pendingJobItems(jobId, afterPosition, limit) {
      host.open();
      const found = jobs.get(jobId);
      const pending = [];
      if (found === undefined) return [];
      for (let p = Math.max(0, afterPosition + 1); p < found.items.length; p++) {
        const item = found.items[p] as MemoryItem;
        if (!item.billable || item.result !== null) continue;
        pending.push({ position: p, email: item.email });
        if (pending.length >= limit) break;
      }
      return pending;
    },
    async pendingJobItemsAt(jobId, positions) {
      host.open();
      const items = jobs.get(jobId)?.items ?? [];
      const pending = [];
      for (const position of new Set(positions)) {
        const item = items[position];
        if (item?.billable === true && item.result === null) {
          pending.push({ position, email: item.email });
        }
      }
      return pending.sort((a, b) => a.position - b.position);
    },
    async recordJobResults(accountId, jobId, writes, at) {
      const found = jobOf(accountId, jobId);
      if (found === undefined) return { ok: false, code: 'job_not_found' };
      if (found.job.status !== 'processing') return { ok: false, code: 'job_finished' };
      // In order, as SQLite's statements run: a position given its result by an earlier write
      // of this call (itself, or the address it repeats) is skipped with its ledger request.
      const taken = new Set<number>();
      const fresh = writes.filter(({ position }) => {
        if (found.items[position]?.result !== null || taken.has(position)) return false;
        taken.add(position);
        for (const later of found.duplicates.get(position) ?? []) taken.add(later);
        return true;
      });
      const requests = fresh.flatMap((write) => (write.ledger === undefined ? [] : [write.ledger]));
      const outcome = file(accountId, requests, at);
      if (!outcome.ok) return outcome as JobWriteOutcome;
      for (const write of fresh) {
        found.job = place(found, write.position, { record: write.record, state: write.state });
      }
      return { ok: true, job: found.job };
    },
    async reholdJob(accountId, jobId, reserve, at) {
      const found = jobOf(accountId, jobId);
      if (found === undefined) return { ok: false, code: 'job_not_found' };
      if (found.job.status !== 'processing') return { ok: false, code: 'job_finished' };
      const outcome = file(accountId, [reserve], at);
      if (!outcome.ok) return outcome as JobWriteOutcome;
      found.job = { ...found.job, reservation: reserve.ref, holds: found.job.holds + 1 };
      return { ok: true, job: found.job };
    },
    async renewHold(accountId, reservation, expiresAt) {
      host.open();
      return renewIn(host.ledgerBook(accountId), reservation, expiresAt);
    },
    async finishJob(accountId, jobId, finish, webhook, at) {
      const found = jobOf(accountId, jobId);
      if (found === undefined) return { ok: false, code: 'job_not_found' };
      if (found.job.status !== 'processing') return { ok: true, job: found.job };
      const release = finalRelease(host.ledgerBook(accountId), found.job.reservation);
      const outcome = file(accountId, release, at);
      if (!outcome.ok) return outcome as JobWriteOutcome;
      found.job = { ...found.job, ...finish };
      if (webhook !== undefined) webhooks.set(webhook.id, { ...webhook });
      return { ok: true, job: found.job };
    },
    async jobResults(jobId, afterPosition, limit) {
      host.open();
      const found = jobs.get(jobId);
      if (found === undefined) return [];
      const rows = [];
      for (let p = Math.max(0, afterPosition + 1); p < found.items.length; p++) {
        const item = found.items[p] as MemoryItem;
        if (item.result === null) continue;
        rows.push({
          position: p,
          input: item.email,
          record: item.result.record,
          duplicate: item.duplicateOf !== null,
        });
        if (rows.length >= limit) break;
      }
      return rows;
    },
    async purgeJobs(at) {
      host.open();
      let purged = 0;
      for (const [id, found] of jobs) {
        const { purgeAt } = found.job;
        if (purgeAt === null || purgeAt > at) continue;
        jobs.delete(id);
        for (const [messageId, message] of webhooks) {
          if (message.jobId === id) webhooks.delete(messageId);
        }
        purged++;
      }
      return purged;
    },
    async dueWebhooks(at, limit) {
      host.open();
      return [...webhooks.values()]
        .filter((message) => message.status === 'pending' && message.nextAttemptAt <= at)
        .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt)
        .slice(0, limit);
    },
    async jobWebhooks(jobId) {
      host.open();
      return [...webhooks.values()].filter((message) => message.jobId === jobId);
    },
    async listWebhooks(accountId, query) {
      host.open();
      const own = [...webhooks.values()].filter((message) => message.accountId === accountId);
      return listed(own, query);
    },
    async updateWebhook(id, changes, leasedUntil) {
      host.open();
      const message = webhooks.get(id);
      if (message === undefined) return false;
      if (leasedUntil !== undefined && !pendingAt(message, leasedUntil)) return false;
      webhooks.set(id, { ...message, ...changes });
      return true;
    },
    async leaseWebhook(id, expectedNextAttemptAt, until) {
      host.open();
      const message = webhooks.get(id);
      if (message === undefined || !pendingAt(message, expectedNextAttemptAt)) return false;
      webhooks.set(id, { ...message, nextAttemptAt: until });
      return true;
    },
  };
}
