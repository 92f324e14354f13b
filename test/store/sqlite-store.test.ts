import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createSqliteStore, MIGRATIONS } from '../../src/sqlite.js';
import type { FilterRecord, FilterType } from '../../src/ports/store.js';
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
