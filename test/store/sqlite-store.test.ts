import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createSqliteStore, MIGRATIONS } from '../../src/sqlite.js';
import { JOB_ITEMS_AT_ONCE, STAGED_JOB_REASON } from '../../src/adapters/sqlite/batch-store.js';
import type {
  FilterRecord,
  FilterType,
  JobRecord,
  JobResultState,
  LedgerCommit,
  NewJobItem,
  Store,
} from '../../src/ports/store.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { turnCounter } from '../helpers/turns.js';
import { job } from './batch-contract.js';
import { account, storeContract } from './contract.js';

const dir = mkdtempSync(join(tmpdir(), 'mailverdict-sqlite-'));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

storeContract('sqlite (file, WAL)', () => createSqliteStore(join(dir, `contract-${files++}.db`)));
storeContract('sqlite (:memory:)', () => createSqliteStore(':memory:'));

describe('sqlite store: ended rate-limit windows', () => {
  afterEach(() => vi.useRealTimers());

  it('are deleted on the sweep timer, while live windows and their counts stay', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'], now: 1_700_000_000_000 });
    const path = join(dir, `sweep-${files++}.db`);
    const store = createSqliteStore(path, { rateLimitSweepMs: 10_000 });
    const reader = new Database(path, { readonly: true });
    const keys = () =>
      (reader.prepare('SELECT key FROM rate_limits ORDER BY key').all() as { key: string }[]).map(
        (row) => row.key.replace(/^minute:/, ''),
      );
    try {
      const minute = store.rateCounter('minute', 60_000);
      await minute.hit('ended');
      await minute.hit('ended');
      vi.advanceTimersByTime(30_000); // two sweeps, nothing has ended yet
      await minute.hit('live');
      expect(keys()).toEqual(['ended', 'live']);

      vi.advanceTimersByTime(30_000); // 'ended' ends at +60 s; 'live' at +90 s
      expect(keys()).toEqual(['live']);
      expect(await minute.peek('live')).toMatchObject({ count: 1 });
      // The limiter starts a deleted window afresh, as it would an ended one.
      expect(await minute.hit('ended')).toMatchObject({ count: 1 });

      await store.close();
      vi.advanceTimersByTime(60_000); // a stopped sweeper touches no closed database
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      reader.close();
    }
  });

  it('are kept when sweeping is off', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
    const store = createSqliteStore(':memory:', { rateLimitSweepMs: 0, holdSweepMs: 0 });
    expect(vi.getTimerCount()).toBe(0);
    await store.close();
  });
});

describe('sqlite store: migration 2, IP filter prefixes', () => {
  it('counts the IP filters a file of schema 1 holds already', async () => {
    const path = join(dir, `migrate-${files++}.db`);
    const old = new Database(path);
    old.exec(MIGRATIONS[0] as string);
    old.pragma('user_version = 1');
    old.exec(`INSERT INTO accounts (id, email, plan, billing_anchor_day, webhook_secret, created_at)
      VALUES ('acct_a', 'a@example.org', 'free', 1, 'whsec_x', 1)`);
    const insert = old.prepare(
      `INSERT INTO filters (id, account_id, type, value, action, created_at)
       VALUES (?, 'acct_a', ?, ?, 'block', 1)`,
    );
    insert.run('flt_1', 'ip_address', '10.0.0.0/8');
    insert.run('flt_2', 'ip_address', '11.0.0.0/8');
    insert.run('flt_3', 'ip_address', '2001:db8::1');
    insert.run('flt_4', 'domain', 'example.com');
    old.close();
    const store = createSqliteStore(path);
    try {
      expect(await store.ipFilterPrefixes('acct_a')).toEqual({ v4: [8], v6: [128] });
      await store.deleteFilter('acct_a', 'flt_1');
      expect(await store.ipFilterPrefixes('acct_a')).toEqual({ v4: [8], v6: [128] });
      await store.deleteFilter('acct_a', 'flt_2');
      expect(await store.ipFilterPrefixes('acct_a')).toEqual({ v4: [], v6: [128] });
    } finally {
      await store.close();
    }
  });
});

describe('sqlite store: migration 5, what a job was decided under', () => {
  it('reads a job a file of schema 4 holds without them, and keeps them for new jobs', async () => {
    const path = join(dir, `migrate-${files++}.db`);
    const old = new Database(path);
    for (const migration of MIGRATIONS.slice(0, 4)) old.exec(migration);
    old.pragma('user_version = 4');
    old.exec(`INSERT INTO accounts (id, email, plan, billing_anchor_day, webhook_secret, created_at)
      VALUES ('acct_a', 'a@example.org', 'free', 1, 'whsec_x', 1)`);
    old.exec(`INSERT INTO batch_jobs (id, account_id, method, status, total_emails, billable, cost,
        reservation, holds, callback_url, created_at)
      VALUES ('job_old', 'acct_a', 'quick', 'processing', 1, 0, 1, NULL, 0, NULL, 1)`);
    old.close();
    const store = createSqliteStore(path);
    try {
      const before = await store.getJob('acct_a', 'job_old');
      expect(before).toMatchObject({ id: 'job_old', status: 'processing' });
      expect(before?.baseUrl).toBeUndefined();
      expect(before?.callbackPolicy).toBeUndefined();
      const decided = {
        ...(before as NonNullable<typeof before>),
        id: 'job_new',
        baseUrl: null,
        callbackPolicy: { allowHttp: false, allowPrivateNetworks: true },
      };
      await store.createJob(decided, [], { requests: [] }, 2);
      expect(await store.getJob('acct_a', 'job_new')).toMatchObject({
        baseUrl: null,
        callbackPolicy: { allowHttp: false, allowPrivateNetworks: true },
      });
    } finally {
      await store.close();
    }
  });
});

describe('sqlite store: migration 6, deliveries an operator can see', () => {
  it('reads a webhook a file of schema 5 holds with no last status, and lists it', async () => {
    const path = join(dir, `migrate-${files++}.db`);
    const old = new Database(path);
    for (const migration of MIGRATIONS.slice(0, 5)) old.exec(migration);
    old.pragma('user_version = 5');
    old.exec(`INSERT INTO accounts (id, email, plan, billing_anchor_day, webhook_secret, created_at)
      VALUES ('acct_a', 'a@example.org', 'free', 1, 'whsec_x', 1)`);
    old.exec(`INSERT INTO batch_webhooks (id, account_id, job_id, url, payload, status, attempts,
        next_attempt_at, last_error, created_at)
      VALUES ('msg_old', 'acct_a', 'job_old', 'https://hooks.example.com/', '{}', 'failed', 8,
        5, 'HTTP 500', 1)`);
    old.close();
    const store = createSqliteStore(path);
    try {
      expect(await store.listWebhooks('acct_a', { status: 'failed', limit: 5 })).toMatchObject([
        { id: 'msg_old', attempts: 8, lastStatus: null, lastError: 'HTTP 500' },
      ]);
    } finally {
      await store.close();
    }
  });
});

describe('sqlite store: which filter types an account has', () => {
  const filter = (id: string, type: FilterType, value: string): FilterRecord => ({
    id,
    accountId: 'acct_a',
    type,
    value,
    action: 'block',
    reason: null,
    createdAt: 1,
  });

  it("sees another connection's filter writes on the same file at its next lookup", async () => {
    const path = join(dir, `filter-types-${files++}.db`);
    const server = createSqliteStore(path);
    const cli = createSqliteStore(path);
    try {
      await server.insertAccount(account('acct_a'));
      // The server learns that the account has no filters, then the CLI adds one.
      expect(await server.findFilters('acct_a', 'email', ['a@example.com'])).toEqual([]);
      expect(await server.findFilters('acct_a', 'domain', ['example.com', 'com'])).toEqual([]);
      await cli.insertFilter(filter('flt_1', 'email', 'a@example.com'));
      await cli.insertFilter(filter('flt_2', 'domain', 'example.com'));
      expect(await server.findFilters('acct_a', 'email', ['a@example.com'])).toMatchObject([
        { id: 'flt_1' },
      ]);
      expect(await server.findFilters('acct_a', 'domain', ['example.com', 'com'])).toMatchObject([
        { id: 'flt_2' },
      ]);
      // And their removal.
      await cli.deleteFilter('acct_a', 'flt_1');
      expect(await server.findFilters('acct_a', 'email', ['a@example.com'])).toEqual([]);
    } finally {
      await cli.close();
      await server.close();
    }
  });

  it('sees its own filter writes at once', async () => {
    const store = createSqliteStore(':memory:');
    try {
      await store.insertAccount(account('acct_a'));
      expect(await store.findFilters('acct_a', 'domain', ['example.com'])).toEqual([]);
      await store.insertFilter(filter('flt_1', 'domain', 'example.com'));
      expect(await store.findFilters('acct_a', 'domain', ['example.com'])).toMatchObject([
        { id: 'flt_1' },
      ]);
      expect(await store.findFilters('acct_a', 'email', ['a@example.com'])).toEqual([]);
      await store.deleteFilter('acct_a', 'flt_1');
      expect(await store.findFilters('acct_a', 'domain', ['example.com'])).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

describe('sqlite store: group commits', () => {
  it('writes each account balance a burst left, as its ledger adds up, for the next opener', async () => {
    const path = join(dir, `group-${files++}.db`);
    const store = createSqliteStore(path);
    for (const id of ['acct_a', 'acct_b']) {
      await store.insertAccount(account(id));
      await store.applyLedger(id, { kind: 'grant', ref: 'g', amount: 10 }, 1);
    }
    // One group: reserves and settles on two accounts, some refused for want of credit.
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        store.commitLedger(
          i % 2 === 0 ? 'acct_a' : 'acct_b',
          {
            requests: [
              { kind: 'reserve', ref: `r${i}`, amount: 1, expiresAt: 100 },
              { kind: 'settle', ref: `s${i}`, reservation: `r${i}`, amount: 1 },
            ],
          },
          2,
        ),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.ok)).toHaveLength(20);
    await store.close();
    const reopened = createSqliteStore(path);
    for (const id of ['acct_a', 'acct_b']) {
      const entries = await reopened.ledgerEntries(id);
      const used = entries.filter((entry) => entry.kind === 'settle').length;
      expect(used).toBe(10);
      expect(await reopened.balance(id)).toEqual({ available: 0, reserved: 0, used, total: 10 });
    }
    await reopened.close();
  });
});

describe('sqlite store: a large job is created in slices', () => {
  const SIZE = 2_500;
  /**
   * Every 7th address is free (its result known at submission); from the 1,200th on, every
   * 11th repeats the one 1,200 before (in an earlier slice: free or not); the rest are billable.
   */
  const items: NewJobItem[] = Array.from({ length: SIZE }, (_, i) => {
    const email = `user${i}@example.org`;
    if (i >= 1_200 && i % 11 === 0) {
      return {
        email: `user${i - 1_200}@example.org`,
        billable: false,
        duplicateOf: i - 1_200,
        result: null,
      };
    }
    if (i % 7 === 0) {
      const state = (['deliverable', 'undeliverable', 'risky'] as const)[i % 3] as JobResultState;
      return { email, billable: false, duplicateOf: null, result: { record: `{"i":${i}}`, state } };
    }
    return { email, billable: true, duplicateOf: null, result: null };
  });
  const billable = items.filter((item) => item.billable).length;
  const reserve = (id: string): LedgerCommit => ({
    requests: [
      { kind: 'reserve', ref: `mv:batch:${id}:hold:1`, amount: billable, expiresAt: 9e12 },
    ],
  });
  const newJob = (id: string) =>
    job(id, 'acct_a', { totalEmails: SIZE, billable, reservation: `mv:batch:${id}:hold:1` });

  async function opened(path: string, sliceMs = 0): Promise<Store> {
    const store = createSqliteStore(path, { sliceMs });
    if ((await store.getAccount('acct_a')) === undefined) {
      await store.insertAccount(account('acct_a'));
      await store.applyLedger('acct_a', { kind: 'grant', ref: 'g', amount: 10_000 }, 1);
    }
    return store;
  }

  /** Everything a reader sees of a job: its record, pending items and results, page by page. */
  async function contents(store: Store, id: string) {
    const { processed, valid, invalid, risky, status, reservation, holds } = (await store.getJob(
      'acct_a',
      id,
    )) as JobRecord;
    return {
      job: { processed, valid, invalid, risky, status, reservation, holds },
      pending: await store.pendingJobItems(id, -1, SIZE),
      results: await store.jobResults(id, -1, SIZE),
    };
  }

  it('stores what one transaction stores, requests served between its transactions', async () => {
    const store = await opened(join(dir, `staged-${files++}.db`));
    const memory = createMemoryStore();
    await memory.insertAccount(account('acct_a'));
    await memory.applyLedger('acct_a', { kind: 'grant', ref: 'g', amount: 10_000 }, 1);
    try {
      const counter = turnCounter();
      const outcome = await store.createJob(newJob('job_big'), items, reserve('job_big'), 1000);
      // 0 ms slices: ROWS_PER_CLOCK_READ rows a transaction, a turn of the loop each.
      expect(counter.stop()).toBeGreaterThanOrEqual(SIZE / JOB_ITEMS_AT_ONCE);
      expect(outcome).toMatchObject({ ok: true, job: { status: 'processing' } });
      await memory.createJob(newJob('job_big'), items, reserve('job_big'), 1000);
      const stored = await contents(store, 'job_big');
      expect(stored).toEqual(await contents(memory, 'job_big'));
      expect(stored.job.processed).toBeGreaterThan(SIZE / 7);
      expect(await store.balance('acct_a')).toEqual(await memory.balance('acct_a'));
    } finally {
      await store.close();
      await memory.close();
    }
  });

  it('stores nothing when the ledger refuses it at the end', async () => {
    const store = await opened(join(dir, `staged-${files++}.db`));
    try {
      const creating = store.createJob(newJob('job_big'), items, reserve('job_big'), 1000);
      // While its items are written, another request spends what it would reserve.
      await new Promise((resolve) => setImmediate(resolve));
      const spend = { kind: 'reserve', ref: 'other', amount: 10_000 - billable + 1 } as const;
      expect((await store.applyLedger('acct_a', spend, 1000)).ok).toBe(true);
      expect(await creating).toMatchObject({ ok: false, code: 'insufficient_credits' });
      expect(await store.getJob('acct_a', 'job_big')).toBeUndefined();
      expect(await store.jobResults('job_big', -1, SIZE)).toEqual([]);
      expect(await store.pendingJobItems('job_big', -1, SIZE)).toEqual([]);
      expect(await store.balance('acct_a')).toMatchObject({ reserved: spend.amount });
    } finally {
      await store.close();
    }
  });

  it('leaves a failed job holding nothing when its process dies while writing it', async () => {
    const path = join(dir, `staged-${files++}.db`);
    const store = await opened(path);
    const creating = store.createJob(newJob('job_big'), items, reserve('job_big'), 1000);
    await new Promise((resolve) => setImmediate(resolve));
    // As a SIGKILL would: the file is left as the last commit left it.
    await store.close();
    await expect(creating).rejects.toMatchObject({ code: 'closed' });
    const reopened = await opened(path);
    try {
      expect(await reopened.getJob('acct_a', 'job_big')).toMatchObject({
        status: 'failed',
        failureReason: STAGED_JOB_REASON,
        reservation: null,
      });
      expect(await reopened.listJobs('processing')).toEqual([]);
      expect(await reopened.balance('acct_a')).toMatchObject({ available: 10_000, reserved: 0 });
    } finally {
      await reopened.close();
    }
  });
});
