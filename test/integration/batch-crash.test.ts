import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/ports/store.js';
import { createSqliteStore } from '../../src/sqlite.js';

const dir = mkdtempSync(join(tmpdir(), 'mailverdict-batch-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const script = join(import.meta.dirname, '../helpers/batch-child.ts');

interface Kill {
  readonly op: keyof Store;
  readonly nth: number;
  readonly when: 'before' | 'after';
}

/** Runs the child once; resolves with the JSON lines it printed and whether it was killed. */
function run(
  path: string,
  plan: object,
  /** SIGKILL the child from here once it reported this many results writes. */
  killAfterWrites?: number,
): Promise<{ lines: Record<string, string>[]; killed: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, path, JSON.stringify(plan)]);
    let out = '';
    let err = '';
    child.stdout.on('data', (data: Buffer) => {
      out += data.toString();
      const writes = out.split('"stored"').length - 1;
      if (killAfterWrites !== undefined && writes >= killAfterWrites) child.kill('SIGKILL');
    });
    child.stderr.on('data', (data: Buffer) => (err += data.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL' && code !== 0) reject(new Error(`child failed (${code}): ${err}`));
      const lines = out
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, string>);
      resolve({ lines, killed: signal === 'SIGKILL' });
    });
  });
}

const DOMAINS = 20;
// 300 addresses over 20 domains, a repeat and a test address among them.
const EMAILS = Array.from({ length: 300 }, (_, i) => `user${i}@d${i % DOMAINS}.example`);
EMAILS.splice(7, 0, 'user3@d3.example');
EMAILS.splice(50, 0, 'deliverable@example.com');
const BILLABLE = 300;

const SCENARIOS: readonly (readonly [string, readonly Kill[], number | null])[] = [
  [
    'before the first results are stored',
    [{ op: 'recordJobResults', nth: 1, when: 'before' }],
    null,
  ],
  [
    'right after results and their settles commit',
    [{ op: 'recordJobResults', nth: 3, when: 'after' }],
    null,
  ],
  [
    'at several points in a row, while resuming too',
    [
      { op: 'recordJobResults', nth: 2, when: 'after' },
      { op: 'recordJobResults', nth: 1, when: 'before' },
      { op: 'recordJobResults', nth: 4, when: 'after' },
      { op: 'recordJobResults', nth: 5, when: 'before' },
    ],
    null,
  ],
  ['before the job finishes', [{ op: 'finishJob', nth: 1, when: 'before' }], null],
  ['right after the submission commits', [{ op: 'createJob', nth: 1, when: 'after' }], null],
  // The hold lapses at once: the restart's sweep releases it and the runner reserves again.
  ['with its credit hold lapsed', [{ op: 'recordJobResults', nth: 2, when: 'after' }], 1],
];

describe('batch jobs on SQLite, SIGKILLed and restarted', () => {
  it.each(SCENARIOS)(
    'completes every address once, charged once: killed %s',
    async (_name, kills, holdTtlMs) => {
      const path = join(dir, `${Math.random().toString(36).slice(2)}.db`);
      const base = { domains: DOMAINS, ...(holdTtlMs === null ? {} : { holdTtlMs }) };
      const first = await run(path, {
        ...base,
        submit: { emails: EMAILS, method: 'quick' },
        killAt: kills[0],
      });
      expect(first.killed).toBe(true);
      const accountId = first.lines[0]?.accountId as string;
      for (const kill of kills.slice(1)) {
        expect((await run(path, { ...base, killAt: kill })).killed).toBe(true);
      }
      const last = await run(path, base);
      expect(last.killed).toBe(false);

      const store = createSqliteStore(path, { holdSweepMs: 0 });
      try {
        const [job] = await store.listJobs('completed');
        expect(job).toMatchObject({ accountId, status: 'completed', processed: EMAILS.length });
        expect(await store.listJobs('processing')).toEqual([]);
        const rows = await store.jobResults(job!.id, -1, 10_000);
        expect(rows.map((row) => row.position)).toEqual(EMAILS.map((_, i) => i));
        expect(rows.map((row) => (JSON.parse(row.record) as { email: string }).email)).toEqual(
          EMAILS,
        );
        expect(job!.valid + job!.invalid + job!.risky).toBe(EMAILS.length);

        const entries = await store.ledgerEntries(accountId);
        const perItem = entries.filter((e) => e.ref.includes(':item:'));
        // One settle (or give-back) per billable address, never two.
        expect(perItem).toHaveLength(BILLABLE);
        expect(new Set(perItem.map((e) => e.ref)).size).toBe(BILLABLE);
        const charged = perItem.filter((e) => e.kind === 'settle').length;
        expect(await store.balance(accountId)).toEqual({
          available: 100_000 - charged,
          reserved: 0,
          used: charged,
          total: 100_000,
        });
        expect(await store.listHolds(accountId)).toEqual([]);
        // A lapsed hold was released by the sweep and made again, not charged twice.
        if (holdTtlMs !== null) expect(job!.holds).toBeGreaterThan(1);
      } finally {
        await store.close();
      }
    },
    60_000,
  );

  it('completes every address once, charged once: killed from outside at arbitrary moments', async () => {
    // The parent's SIGKILL lands wherever the child is by then: verifying, between writes, or
    // inside a results transaction, which then never commits.
    const path = join(dir, 'outside.db');
    const first = await run(
      path,
      { domains: DOMAINS, submit: { emails: EMAILS, method: 'quick' }, reportWrites: true },
      2,
    );
    const accountId = first.lines[0]?.accountId as string;
    for (let round = 0; round < 3; round++) {
      await run(path, { domains: DOMAINS, reportWrites: true }, 1 + round);
    }
    expect((await run(path, { domains: DOMAINS })).killed).toBe(false);
    const store = createSqliteStore(path, { holdSweepMs: 0 });
    try {
      const [job] = await store.listJobs('completed');
      expect(job).toMatchObject({ accountId, processed: EMAILS.length });
      const rows = await store.jobResults(job!.id, -1, 10_000);
      expect(rows.map((row) => row.position)).toEqual(EMAILS.map((_, i) => i));
      const perItem = (await store.ledgerEntries(accountId)).filter((e) =>
        e.ref.includes(':item:'),
      );
      expect(new Set(perItem.map((e) => e.ref)).size).toBe(BILLABLE);
      expect(perItem).toHaveLength(BILLABLE);
      const charged = perItem.filter((e) => e.kind === 'settle').length;
      expect(await store.balance(accountId)).toMatchObject({ reserved: 0, used: charged });
      expect(await store.listHolds(accountId)).toEqual([]);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('reserves nothing and starts nothing when killed while a large submission is written', async () => {
    const path = join(dir, 'while-staged.db');
    // More than JOB_ITEMS_AT_ONCE addresses: checked at once (the service's slices never
    // end), then written in slices of 0 ms, some 47 transactions a turn apart.
    const emails = Array.from({ length: 3_000 }, (_, i) => `user${i}@d${i % DOMAINS}.example`);
    const first = await run(path, {
      domains: DOMAINS,
      submit: { emails, method: 'quick' },
      batchSliceMs: Number.MAX_VALUE,
      storeSliceMs: 0,
      killAtTurn: 10,
    });
    expect(first.killed).toBe(true);
    expect(first.lines.some((line) => 'id' in line)).toBe(false);
    const accountId = first.lines[0]?.accountId as string;
    expect((await run(path, { domains: DOMAINS })).killed).toBe(false);
    const store = createSqliteStore(path, { holdSweepMs: 0 });
    try {
      expect(await store.listJobs('processing')).toEqual([]);
      expect(await store.listJobs('completed')).toEqual([]);
      const [staged] = await store.listJobs('failed');
      expect(staged).toMatchObject({ accountId, reservation: null, processed: 0 });
      expect(staged?.failureReason).toMatch(/did not complete/);
      expect(await store.balance(accountId)).toMatchObject({ available: 100_000, reserved: 0 });
      expect(await store.ledgerEntries(accountId)).toHaveLength(1);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('reserves nothing and stores nothing when killed before the submission commits', async () => {
    const path = join(dir, 'before-submit.db');
    const first = await run(path, {
      domains: DOMAINS,
      submit: { emails: EMAILS, method: 'quick' },
      killAt: { op: 'createJob', nth: 1, when: 'before' },
    });
    expect(first.killed).toBe(true);
    const accountId = first.lines[0]?.accountId as string;
    await run(path, { domains: DOMAINS });
    const store = createSqliteStore(path, { holdSweepMs: 0 });
    try {
      expect(await store.listJobs('processing')).toEqual([]);
      expect(await store.listJobs('completed')).toEqual([]);
      expect(await store.balance(accountId)).toMatchObject({ available: 100_000, reserved: 0 });
    } finally {
      await store.close();
    }
  }, 60_000);
});
