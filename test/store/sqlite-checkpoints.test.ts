import { existsSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { checkpointOffThread, WAL_BOUND_PAGES } from '../../src/adapters/sqlite/checkpoints.js';

const dir = mkdtempSync(join(tmpdir(), 'mailverdict-checkpoints-'));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A WAL database with one table, as the store opens it. */
function open(): { db: Database.Database; path: string; write: (rows: number) => void } {
  const path = join(dir, `wal-${files++}.db`);
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const write = db.transaction((rows: number) => {
    for (let i = 0; i < rows; i++) insert.run('x'.repeat(400));
  });
  return { db, path, write };
}

const autocheckpoint = (db: Database.Database) =>
  db.pragma('wal_autocheckpoint', { simple: true }) as number;
// Small sizes and short intervals; the defaults are WAL_THREAD_BYTES and WAL_WATCH_MS.
const SMALL = { startAtBytes: 64 * 1024, watchMs: 5, everyMs: 5 };

describe('sqlite WAL checkpoints off the event loop', () => {
  it("are a worker's once the WAL grows: the connection's only past a bound, the file gets the pages", async () => {
    const { db, path, write } = open();
    const inline = autocheckpoint(db);
    expect(inline).toBeGreaterThan(0);
    const checkpoints = checkpointOffThread(db, SMALL);
    expect(checkpoints.offThread()).toBe(false);

    // Some 60 pages: past the worker's start, far below the connection's own 1,000.
    write(500);
    const fileBefore = statSync(path).size;
    await expect.poll(() => checkpoints.offThread(), { timeout: 10_000 }).toBe(true);
    expect(autocheckpoint(db)).toBe(WAL_BOUND_PAGES);
    expect(WAL_BOUND_PAGES).toBeGreaterThan(inline);
    // The rows reach the database file, copied there by the worker's connection.
    await expect
      .poll(() => statSync(path).size, { timeout: 10_000 })
      .toBeGreaterThan(fileBefore + 400 * 500);

    // Past what the connection would have checkpointed itself, in transactions of its own.
    for (let i = 0; i < 20; i++) write(500);
    expect(autocheckpoint(db)).toBe(WAL_BOUND_PAGES);

    await checkpoints.close();
    expect(checkpoints.offThread()).toBe(false);
    expect(autocheckpoint(db)).toBe(inline);
    expect(checkpoints.failure()).toBeUndefined();
    db.close();
    // Both connections closed: the last checkpointed everything and removed the WAL.
    expect(existsSync(`${path}-wal`)).toBe(false);
    const reader = new Database(path, { readonly: true });
    expect(reader.prepare('SELECT count(*) FROM t').pluck().get()).toBe(21 * 500);
    reader.close();
  });

  it("stay the connection's when the worker cannot open the database", async () => {
    const { db, path, write } = open();
    const inline = autocheckpoint(db);
    write(500);
    // The worker opens the file by its name: gone, it cannot.
    renameSync(path, `${path}.moved`);
    const checkpoints = checkpointOffThread(db, SMALL);
    await expect.poll(() => checkpoints.failure(), { timeout: 10_000 }).toBeDefined();
    expect(checkpoints.offThread()).toBe(false);
    expect(autocheckpoint(db)).toBe(inline);
    // The connection goes on writing, and checkpoints itself past its 1,000 pages.
    for (let i = 0; i < 20; i++) write(500);
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(21 * 500);
    expect(statSync(`${path}.moved`).size).toBeGreaterThan(400 * 500 * 10);
    await checkpoints.close();
    db.close();
  });

  it('never start for an in-memory database', async () => {
    const db = new Database(':memory:');
    const checkpoints = checkpointOffThread(db, SMALL);
    db.exec('CREATE TABLE t (v TEXT)');
    db.prepare('INSERT INTO t VALUES (?)').run('x'.repeat(200_000));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(checkpoints.offThread()).toBe(false);
    expect(checkpoints.failure()).toBeUndefined();
    await checkpoints.close();
    db.close();
  });
});
