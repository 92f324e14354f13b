import type {
  BatchStore,
  JobRecord,
  JobResult,
  JobResultRow,
  JobResultState,
  JobWriteOutcome,
  NewJobItem,
  PendingJobItem,
  WebhookMessage,
} from '../../ports/store.js';
import { applyLedgerCommit } from '../../store/rules/ledger.js';
import { finalRelease, renewIn } from '../../store/rules/holds.js';
import { StoreError } from '../../store/rules/store-error.js';
import { pendingAt, withLastStatus } from '../../store/rules/webhooks.js';
import {
  chunked,
  parsed,
  records,
  updateRecord,
  type Command,
  type RedisConnection,
} from './connection.js';
import { COUNTER, recordResultsByScript, scriptable } from './job-results.js';
import type { RedisKeys } from './keys.js';
import { commitWants, type AccountWrites } from './ledger.js';

/** An item as stored: the address and how it is charged. */
interface StoredItem {
  readonly email: string;
  readonly billable: boolean;
  readonly duplicateOf: number | null;
}

/** A result as stored: the record as downloaded. */
interface StoredResult {
  readonly record: string;
  readonly duplicate: boolean;
}

/** Webhooks read per Redis call when an account's are listed. */
const PAGE = 500;

const counted = (job: JobRecord, state: JobResultState, count: number): JobRecord => ({
  ...job,
  processed: job.processed + count,
  [COUNTER[state]]: job[COUNTER[state]] + count,
});

/**
 * The batch part of the Redis Store. A job's rows belong to its account: every write that
 * touches them is one atomic step with the ledger requests that pay for them, so a crash or a
 * lost race leaves both or neither: the account's guarded write (ledger.ts), or for a
 * worker's flush of results, the results script (job-results.ts). A job's results and
 * pending addresses are sorted sets of positions, read in pages.
 */
export function createRedisBatchStore(
  connection: RedisConnection,
  keys: RedisKeys,
  accounts: AccountWrites,
  open: () => void,
): BatchStore {
  const { call } = connection;
  const ownJob = (text: unknown, accountId: string): JobRecord | undefined => {
    const job = parsed<JobRecord>(text);
    return job?.accountId === accountId ? job : undefined;
  };
  const jobCommand = (job: JobRecord): Command => ['hset', keys.jobs, job.id, JSON.stringify(job)];

  /** Positions of a sorted set after `after`, at most `limit`, with their rows in `hash`. */
  async function page<T>(set: string, hash: string, after: number, limit: number) {
    const positions = await call<string[]>([
      'zrangebyscore',
      set,
      `(${after}`,
      '+inf',
      'LIMIT',
      0,
      Math.max(0, limit),
    ]);
    return rowsAt<T>(hash, positions);
  }
  /** The rows of `hash` at `positions`, in their order; missing ones left out. */
  async function rowsAt<T>(hash: string, positions: readonly (string | number)[]) {
    if (positions.length === 0) return [];
    const texts = await call<(string | null)[]>(['hmget', hash, ...positions]);
    return positions.flatMap((position, i) => {
      const row = parsed<T>(texts[i]);
      return row === undefined ? [] : [{ position: Number(position), row }];
    });
  }
  /** The webhooks under `ids`, in their order, each with its last status (null before). */
  const webhooksAt = async (ids: readonly string[]) =>
    (await records<WebhookMessage>(connection, keys.webhooks, ids)).map(withLastStatus);
  const webhookCommands = (message: WebhookMessage): Command[] => [
    ['hset', keys.webhooks, message.id, JSON.stringify(message)],
    message.status === 'pending'
      ? ['zadd', keys.webhooksDue, message.nextAttemptAt, message.id]
      : ['zrem', keys.webhooksDue, message.id],
  ];

  return {
    async createJob(job, items, commit, at) {
      open();
      return accounts.transact(
        job.accountId,
        commitWants(commit),
        [['hexists', keys.jobs, job.id]],
        (book, [exists]) => {
          if (exists === 1) throw new StoreError('constraint', `Job ${job.id} exists.`);
          const outcome = applyLedgerCommit(job.accountId, commit, at, book);
          if (!outcome.ok) return { result: outcome as JobWriteOutcome };
          const { stored, commands } = newJob(keys, job, items);
          return { result: { ok: true, job: stored }, commands };
        },
      );
    },
    async getJob(accountId, id) {
      open();
      return ownJob(await call(['hget', keys.jobs, id]), accountId);
    },
    async listJobs(status) {
      open();
      const ids = await call<string[]>(['zrange', keys.jobsIn(status), 0, -1]);
      return records<JobRecord>(connection, keys.jobs, ids);
    },
    async pendingJobItems(jobId, afterPosition, limit) {
      open();
      const rows = await page<StoredItem>(
        keys.jobPending(jobId),
        keys.jobItems(jobId),
        afterPosition,
        limit,
      );
      return rows.map(({ position, row }) => ({ position, email: row.email }));
    },
    async pendingJobItemsAt(jobId, positions) {
      open();
      const asked = [...new Set(positions)].sort((a, b) => a - b);
      if (asked.length === 0) return [];
      const scores = await call<(string | null)[]>(['zmscore', keys.jobPending(jobId), ...asked]);
      const pending = asked.filter((_, i) => scores[i] !== null);
      const rows = await rowsAt<StoredItem>(keys.jobItems(jobId), pending);
      return rows.map(({ position, row }): PendingJobItem => ({ position, email: row.email }));
    },
    async recordJobResults(accountId, jobId, writes, at) {
      open();
      // A worker's flush (settles and releases of the job's cost): one script, no race.
      if (scriptable(writes)) {
        return recordResultsByScript(connection, keys, accountId, jobId, writes, at);
      }
      const positions = writes.map((write) => write.position);
      const reads: Command[] = [['hget', keys.jobs, jobId]];
      if (positions.length > 0) {
        reads.push(
          ['hmget', keys.jobItems(jobId), ...positions],
          ['zmscore', keys.jobDone(jobId), ...positions],
          ['hmget', keys.jobDuplicates(jobId), ...positions],
        );
      }
      const requests = writes.flatMap((write) =>
        write.ledger === undefined ? [] : [write.ledger],
      );
      return accounts.transact(accountId, commitWants({ requests }), reads, (book, replies) => {
        // The job, then per position: its item, its score among the done, who waits for it.
        const [jobText, items = [], done = [], waiting = []] = replies as [
          unknown,
          ...(string | null)[][],
        ];
        let job = ownJob(jobText, accountId);
        if (job === undefined) return { result: { ok: false, code: 'job_not_found' } };
        if (job.status !== 'processing') return { result: { ok: false, code: 'job_finished' } };
        // A position with its result already, or given one by an earlier write of this call
        // (itself, or the address it repeats), is skipped with its ledger request: writes are
        // taken in order, and a replay writes nothing.
        const seen = new Set<number>();
        const fresh = writes.flatMap((write, i) => {
          const item = parsed<StoredItem>(items[i]);
          if (item === undefined || done[i] !== null || seen.has(write.position)) return [];
          seen.add(write.position);
          const later = (parsed<number[]>(waiting[i]) ?? []).filter((p) => !seen.has(p));
          for (const position of later) seen.add(position);
          return [{ write, item, later }];
        });
        const ledger = fresh.flatMap(({ write }) =>
          write.ledger === undefined ? [] : [write.ledger],
        );
        const outcome = applyLedgerCommit(accountId, { requests: ledger }, at, book);
        if (!outcome.ok) return { result: outcome as JobWriteOutcome };
        const commands: Command[] = [];
        for (const { write, item, later } of fresh) {
          const placed = placeResult(keys, jobId, write.position, item, later, write);
          commands.push(...placed);
          job = counted(job, write.state, 1 + later.length);
        }
        if (fresh.length > 0) commands.push(jobCommand(job));
        return { result: { ok: true, job }, commands };
      });
    },
    async reholdJob(accountId, jobId, reserve, at) {
      open();
      return accounts.transact(
        accountId,
        commitWants({ requests: [reserve] }),
        [['hget', keys.jobs, jobId]],
        (book, [jobText]) => {
          const job = ownJob(jobText, accountId);
          if (job === undefined) return { result: { ok: false, code: 'job_not_found' } };
          if (job.status !== 'processing') {
            return { result: { ok: false, code: 'job_finished' } };
          }
          const outcome = applyLedgerCommit(accountId, { requests: [reserve] }, at, book);
          if (!outcome.ok) return { result: outcome as JobWriteOutcome };
          const reheld = { ...job, reservation: reserve.ref, holds: job.holds + 1 };
          return { result: { ok: true, job: reheld }, commands: [jobCommand(reheld)] };
        },
      );
    },
    async renewHold(accountId, reservation, expiresAt) {
      open();
      return accounts.transact(accountId, { reservations: [reservation] }, [], (book) => ({
        result: renewIn(book, reservation, expiresAt),
      }));
    },
    async finishJob(accountId, jobId, finish, webhook, at) {
      open();
      return accounts.transact(accountId, {}, [['hget', keys.jobs, jobId]], (book, [jobText]) => {
        const job = ownJob(jobText, accountId);
        if (job === undefined) return { result: { ok: false, code: 'job_not_found' } };
        if (job.status !== 'processing') return { result: { ok: true, job } };
        const outcome = applyLedgerCommit(
          accountId,
          { requests: finalRelease(book, job.reservation) },
          at,
          book,
        );
        if (!outcome.ok) return { result: outcome as JobWriteOutcome };
        const finished: JobRecord = { ...job, ...finish };
        const commands: Command[] = [
          jobCommand(finished),
          ['zrem', keys.jobsIn(job.status), job.id],
          ['zadd', keys.jobsIn(finished.status), finished.createdAt, job.id],
          ['zadd', keys.jobPurges, finish.purgeAt, job.id],
        ];
        if (webhook !== undefined) {
          commands.push(
            ...webhookCommands(webhook),
            ['zadd', keys.jobWebhooks(jobId), webhook.createdAt, webhook.id],
            ['zadd', keys.accountWebhooks(accountId), webhook.createdAt, webhook.id],
          );
        }
        return { result: { ok: true, job: finished }, commands };
      });
    },
    async jobResults(jobId, afterPosition, limit) {
      open();
      const rows = await page<StoredResult>(
        keys.jobDone(jobId),
        keys.jobResults(jobId),
        afterPosition,
        limit,
      );
      // Each position's address as submitted is its item's: a duplicate's result is a copy.
      const items = new Map(
        (
          await rowsAt<StoredItem>(
            keys.jobItems(jobId),
            rows.map((r) => r.position),
          )
        ).map(({ position, row }) => [position, row.email]),
      );
      return rows.map(({ position, row }): JobResultRow => ({
        position,
        input: items.get(position) ?? '',
        record: row.record,
        duplicate: row.duplicate,
      }));
    },
    async purgeJobs(at) {
      open();
      const ids = await call<string[]>(['zrangebyscore', keys.jobPurges, '-inf', at]);
      let purged = 0;
      for (const id of ids) {
        const job = parsed<JobRecord>(await call(['hget', keys.jobs, id]));
        if (job === undefined) {
          await call(['zrem', keys.jobPurges, id]);
          continue;
        }
        const reads: Command[] = [
          ['hget', keys.jobs, id],
          ['zrange', keys.jobWebhooks(id), 0, -1],
        ];
        const deleted = await accounts.transact(job.accountId, {}, reads, (_, [text, messages]) => {
          const current = parsed<JobRecord>(text);
          if (current === undefined || current.purgeAt === null || current.purgeAt > at) {
            return { result: false };
          }
          return { result: true, commands: purgeCommands(keys, current, messages as string[]) };
        });
        if (deleted) purged++;
      }
      return purged;
    },
    async dueWebhooks(at, limit) {
      open();
      const ids = await call<string[]>([
        'zrangebyscore',
        keys.webhooksDue,
        '-inf',
        at,
        'LIMIT',
        0,
        Math.max(0, limit),
      ]);
      const messages = await webhooksAt(ids);
      return messages.filter((message) => message.status === 'pending');
    },
    async jobWebhooks(jobId) {
      open();
      return webhooksAt(await call<string[]>(['zrange', keys.jobWebhooks(jobId), 0, -1]));
    },
    async listWebhooks(accountId, query) {
      open();
      // Newest first; equal times by id, descending (ZREVRANGE orders ties so).
      const ids = await call<string[]>(['zrevrange', keys.accountWebhooks(accountId), 0, -1]);
      const found: WebhookMessage[] = [];
      for (let start = 0; start < ids.length && found.length < query.limit; start += PAGE) {
        for (const message of await webhooksAt(ids.slice(start, start + PAGE))) {
          if (query.status === undefined || message.status === query.status) found.push(message);
        }
      }
      return found.slice(0, Math.max(0, query.limit));
    },
    async updateWebhook(id, changes, leasedUntil) {
      open();
      return updateRecord<WebhookMessage, boolean>(connection, keys.webhooks, id, (message) => {
        if (message === undefined) return { result: false };
        if (leasedUntil !== undefined && !pendingAt(message, leasedUntil)) {
          return { result: false };
        }
        return { result: true, commands: webhookCommands({ ...message, ...changes }) };
      });
    },
    async leaseWebhook(id, expectedNextAttemptAt, until) {
      open();
      return updateRecord<WebhookMessage, boolean>(connection, keys.webhooks, id, (message) => {
        if (message === undefined || !pendingAt(message, expectedNextAttemptAt)) {
          return { result: false };
        }
        return { result: true, commands: webhookCommands({ ...message, nextAttemptAt: until }) };
      });
    },
  };
}

/**
 * A new job's rows: its items, the results known at submission (and their duplicates'), the
 * billable positions still pending, and the job with its counters.
 */
function newJob(
  keys: RedisKeys,
  job: JobRecord,
  items: readonly NewJobItem[],
): { stored: JobRecord; commands: Command[] } {
  let stored: JobRecord = { ...job, processed: 0, valid: 0, invalid: 0, risky: 0 };
  const results: (JobResult | null)[] = items.map(() => null);
  // Position -> the later positions repeating it that have no result yet.
  const waiting = new Map<number, number[]>();
  items.forEach((item, position) => {
    if (item.duplicateOf === null) return;
    const later = waiting.get(item.duplicateOf);
    if (later === undefined) waiting.set(item.duplicateOf, [position]);
    else later.push(position);
  });
  const place = (position: number, result: JobResult) => {
    if (results[position] !== null) return;
    results[position] = result;
    stored = counted(stored, result.state, 1);
    for (const later of waiting.get(position) ?? []) {
      if (results[later] !== null) continue;
      results[later] = result;
      stored = counted(stored, result.state, 1);
    }
    waiting.delete(position);
  };
  items.forEach((item, position) => {
    if (item.result !== null) place(position, item.result);
  });

  const itemPairs: (string | number)[] = [];
  const resultPairs: (string | number)[] = [];
  const donePairs: number[] = [];
  const pendingPairs: number[] = [];
  items.forEach(({ email, billable, duplicateOf }, position) => {
    itemPairs.push(position, JSON.stringify({ email, billable, duplicateOf }));
    const result = results[position];
    if (result !== null && result !== undefined) {
      const stored: StoredResult = { record: result.record, duplicate: duplicateOf !== null };
      resultPairs.push(position, JSON.stringify(stored));
      donePairs.push(position, position);
    } else if (billable) pendingPairs.push(position, position);
  });
  const waitingPairs: (string | number)[] = [];
  for (const [position, later] of waiting) {
    const open = later.filter((p) => results[p] === null);
    if (open.length > 0) waitingPairs.push(position, JSON.stringify(open));
  }
  return {
    stored,
    commands: [
      ...chunked('hset', keys.jobItems(job.id), itemPairs),
      ...chunked('hset', keys.jobResults(job.id), resultPairs),
      ...chunked('zadd', keys.jobDone(job.id), donePairs),
      ...chunked('zadd', keys.jobPending(job.id), pendingPairs),
      ...chunked('hset', keys.jobDuplicates(job.id), waitingPairs),
      ['hset', keys.jobs, job.id, JSON.stringify(stored)],
      ['zadd', keys.jobsIn(stored.status), stored.createdAt, stored.id],
    ],
  };
}

/** Stores a position's result and gives it to the later positions that wait for it. */
function placeResult(
  keys: RedisKeys,
  jobId: string,
  position: number,
  item: StoredItem,
  later: readonly number[],
  { record }: JobResult,
): Command[] {
  const own: StoredResult = { record, duplicate: item.duplicateOf !== null };
  const copy = JSON.stringify({ record, duplicate: true } satisfies StoredResult);
  const commands: Command[] = [
    ['hset', keys.jobResults(jobId), position, JSON.stringify(own)],
    ['zadd', keys.jobDone(jobId), position, position],
    ['zrem', keys.jobPending(jobId), position],
  ];
  for (const duplicate of later) {
    commands.push(
      ['hset', keys.jobResults(jobId), duplicate, copy],
      ['zadd', keys.jobDone(jobId), duplicate, duplicate],
    );
  }
  if (later.length > 0) commands.push(['hdel', keys.jobDuplicates(jobId), position]);
  return commands;
}

/** Everything of a finished job: its rows, its webhooks, its places in the indexes. */
function purgeCommands(keys: RedisKeys, job: JobRecord, messages: readonly string[]): Command[] {
  const commands: Command[] = [
    ['hdel', keys.jobs, job.id],
    ['zrem', keys.jobsIn(job.status), job.id],
    ['zrem', keys.jobPurges, job.id],
    [
      'del',
      keys.jobItems(job.id),
      keys.jobResults(job.id),
      keys.jobDone(job.id),
      keys.jobPending(job.id),
      keys.jobDuplicates(job.id),
      keys.jobWebhooks(job.id),
    ],
  ];
  if (messages.length > 0) {
    commands.push(
      ['hdel', keys.webhooks, ...messages],
      ['zrem', keys.webhooksDue, ...messages],
      ['zrem', keys.accountWebhooks(job.accountId), ...messages],
    );
  }
  return commands;
}
