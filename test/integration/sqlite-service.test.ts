import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { createService } from '../../src/compose/service.js';
import { ServiceError } from '../../src/service/service-error.js';
import { createSqliteStore, MIGRATIONS } from '../../src/sqlite.js';
import { StoreError } from '../../src/store/rules/store-error.js';
import { fixture } from '../helpers/service.js';

const dir = mkdtempSync(join(tmpdir(), 'mailverdict-sqlite-service-'));
let files = 0;
const newPath = () => join(dir, `service-${files++}.db`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CHILD = new URL('../helpers/rate-limit-child.ts', import.meta.url).pathname;

/** Starts a child process on the file; resolves once it is ready for the go signal. */
function startChild(path: string, secret: string, count: number) {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, path, secret, String(count)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let output = '';
  const ready = new Promise<void>((resolve) => {
    child.stdout.on('data', function onData(chunk: Buffer) {
      output += chunk.toString();
      if (output.includes('ready\n')) {
        output = output.slice(output.indexOf('ready\n') + 6);
        child.stdout.off('data', onData);
        child.stdout.on('data', (more: Buffer) => (output += more.toString()));
        resolve();
      }
    });
  });
  const done = new Promise<{ admitted: number; refusals: string[] }>((resolve, reject) => {
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(output)) : reject(new Error(`child exited ${code}`)),
    );
  });
  return { child, ready, done };
}

describe('the service on SQLite', () => {
  it('admits exactly the limit of concurrent requests from two processes sharing one file', async () => {
    const path = newPath();
    const { service, secret } = await fixture({
      store: createSqliteStore(path),
      account: { plan: 'free' },
    });
    await service.store.close();
    const children = [startChild(path, secret, 15), startChild(path, secret, 15)];
    await Promise.all(children.map((c) => c.ready));
    for (const { child } of children) child.stdin.end('go\n');
    const results = await Promise.all(children.map((c) => c.done));
    expect(results.reduce((sum, r) => sum + r.admitted, 0)).toBe(10);
    expect(results.flatMap((r) => r.refusals).every((code) => code === 'rate_limit_exceeded')).toBe(
      true,
    );
  }, 60_000);

  it('keeps no plaintext key anywhere in the database files', async () => {
    const path = newPath();
    const { service, secret, accountId } = await fixture({ store: createSqliteStore(path) });
    const { secret: publicKey } = await service.admin.createKey(accountId, {
      kind: 'public',
      trustedDomains: ['example.com'],
    });
    const rotated = await service.admin.rotateKey(
      accountId,
      (await service.admin.listKeys(accountId))[0]!.id,
    );
    await service.authenticate({ apiKey: rotated.secret, endpoint: 'verify' });
    const contents = () =>
      ['', '-wal', '-shm']
        .map((suffix) => path + suffix)
        .filter(existsSync)
        .map((file) => readFileSync(file).toString('latin1'))
        .join('\n');
    const check = () => {
      const text = contents();
      expect(text).toContain('mv_sk_'); // the display prefix is there, so the grep can see text
      for (const key of [secret, publicKey, rotated.secret]) {
        expect(text).not.toContain(key);
        // Not even the random part beyond the four-character display prefix.
        expect(text).not.toContain(key.slice(10, 30));
      }
    };
    check();
    await service.store.close(); // checkpoints the WAL into the main file
    check();
  });

  it('keeps balances and keys across a reopen, at the latest schema version', async () => {
    const path = newPath();
    const first = await fixture({ store: createSqliteStore(path), account: { credits: 20 } });
    await first.service.verify({ accountId: first.accountId }, 'alice@example.org');
    await first.service.store.close();

    const store = createSqliteStore(path);
    const service = createService({ engine: createEngine({ offline: true }), store });
    const caller = await service.authenticate({ apiKey: first.secret, endpoint: 'verify' });
    expect((await service.admin.getAccount(caller.accountId)).credits).toEqual({
      available: 18,
      reserved: 0,
      used: 2,
      total: 20,
    });
    await store.close();
    const db = new Database(path, { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });

  it('refuses to rewrite ledger history, even through SQL', async () => {
    const path = newPath();
    const { service } = await fixture({ store: createSqliteStore(path) });
    await service.store.close();
    const db = new Database(path);
    expect(() => db.prepare('UPDATE ledger_entries SET amount = 1000000').run()).toThrow(
      /append-only/,
    );
    expect(() => db.prepare('DELETE FROM ledger_entries').run()).toThrow(/append-only/);
    db.close();
  });

  it('answers a file locked by another process with a clear error and an unchanged balance', async () => {
    const path = newPath();
    const { service, accountId } = await fixture({
      store: createSqliteStore(path, { busyTimeoutMs: 50 }),
      account: { credits: 10 },
    });
    const locker = new Database(path);
    locker.exec('BEGIN EXCLUSIVE');
    const error = await service.verify({ accountId }, 'alice@example.org').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).code).toBe('internal_error');
    // The kind of fault in the service's words; the driver's own stay with the cause (the log's).
    expect((error as ServiceError).message).toMatch(/busy/);
    expect(((error as ServiceError).cause as StoreError).message).toMatch(/locked/);
    expect(((error as ServiceError).cause as StoreError).code).toBe('busy');
    locker.exec('ROLLBACK');
    locker.close();
    expect((await service.admin.getAccount(accountId)).credits.available).toBe(10);
    expect((await service.verify({ accountId }, 'alice@example.org')).charged).toBe(2);
    await service.store.close();
  });

  it('answers a full database with a clear error, and the ledger stays whole', async () => {
    const path = newPath();
    const store = createSqliteStore(path, { maxSizeBytes: 160 * 1024 });
    const { service, accountId } = await fixture({ store, account: { credits: 1_000_000 } });
    let full: ServiceError | undefined;
    for (let i = 0; i < 5000 && full === undefined; i++) {
      await service
        .createFilter(
          { accountId },
          { value: `blocked-${i}-${'x'.repeat(40)}.com`, type: 'domain', action: 'block' },
        )
        .catch((error: unknown) => {
          full = error as ServiceError;
        });
    }
    expect(full?.code).toBe('internal_error');
    expect(full?.message).toMatch(/full/);
    expect((full?.cause as StoreError).code).toBe('full');
    // Spending goes on or fails whole: the balance always equals the sum of the entries.
    for (let i = 0; i < 50; i++) {
      await service
        .verify({ accountId }, `user${i}@example.org`, { method: 'quick' })
        .catch(() => {});
      const entries = await service.admin.ledger(accountId);
      const balance = (await service.admin.getAccount(accountId)).credits;
      expect(entries.reduce((sum, e) => sum + e.delta, 0)).toBe(balance.available);
      expect(balance.available + balance.reserved + balance.used).toBe(balance.total);
    }
    await store.close();
  });

  it('refuses a damaged file at open with a corrupt StoreError', async () => {
    const path = newPath();
    writeFileSync(path, Buffer.alloc(8192, 0x5a));
    let error: unknown;
    try {
      createSqliteStore(path);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('corrupt');
  });
});
