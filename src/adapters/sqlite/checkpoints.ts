import { stat } from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

/** When the checkpoint worker starts, and how often it checkpoints. */
export interface CheckpointOptions {
  /** The WAL's size at which the worker starts. Default WAL_THREAD_BYTES. */
  readonly startAtBytes?: number;
  /** How often the WAL's size is looked at until then. Default WAL_WATCH_MS. */
  readonly watchMs?: number;
  /** How often the worker checkpoints. Default CHECKPOINT_EVERY_MS. */
  readonly everyMs?: number;
}

/** A quarter of the 1,000 pages (4 MiB) at which the store's connection would checkpoint. */
export const WAL_THREAD_BYTES = 1024 * 1024;
export const WAL_WATCH_MS = 250;
export const CHECKPOINT_EVERY_MS = 100;
/**
 * Pages in the WAL at which the store's connection checkpoints all the same, while a worker
 * checkpoints too (some 40 MiB). The WAL starts over only once a checkpoint has caught up
 * with the writer, which a worker's, beside a writer committing every few milliseconds,
 * seldom does: a 20,000-address job left a 20 MB WAL, and a long burst would grow it without
 * end. At this size the connection's own checkpoint catches up, and copies only what the
 * worker has not yet (its last 100 ms or so).
 */
export const WAL_BOUND_PAGES = 10_000;
/** How long close() waits for the worker's last checkpoint before stopping it. */
const CLOSE_WAIT_MS = 5_000;

/**
 * The worker, as CommonJS source (a file of its own would need a loader for TypeScript under
 * the tests): opens the database, checkpoints it on a timer, says `ready` once open, posts
 * `{ error }` and ends on a failure, and closes on `close`.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let db;
let timer;
const fail = (error) => {
  clearInterval(timer);
  parentPort.postMessage({ error: String(error && error.message || error) });
  try { db?.close(); } catch {}
  parentPort.close();
};
try {
  db = new Database(workerData.path, { fileMustExist: true, timeout: 0 });
  db.pragma('synchronous = NORMAL');
  const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  timer = setInterval(() => {
    try { checkpoint.get(); } catch (error) { fail(error); }
  }, workerData.everyMs);
  parentPort.on('message', (message) => {
    if (message !== 'close') return;
    clearInterval(timer);
    db.close();
    parentPort.close();
  });
  parentPort.postMessage('ready');
} catch (error) {
  fail(error);
}
`;

export interface Checkpoints {
  /** Whether a worker checkpoints the WAL now (the store's connection only past its bound). */
  readonly offThread: () => boolean;
  /** Stops watching, and ends the worker after its checkpoint in progress. */
  readonly close: () => Promise<void>;
  /** What failed in the worker, once it has (checkpoints went back to the connection). */
  readonly failure: () => string | undefined;
}

/**
 * WAL checkpoints off the event loop. SQLite copies the WAL into the database file inside the
 * commit that finds 1,000 pages in it (wal_autocheckpoint), on the committing connection: on
 * the store's, such a checkpoint and its fsyncs held the event loop 10-30 ms (11 ms alone on
 * a quiet 2-core machine), every 75 ms or so while a 50,000-address batch stored its results;
 * they were the longest turns of the server's loop in bench/availability.ts. So once the WAL
 * file has grown past `startAtBytes`, a worker thread with a connection of its own
 * checkpoints every `everyMs` (PASSIVE: it neither waits for nor blocks the writer, and with
 * nothing new it costs a tenth of a millisecond of its own thread), and `db` checkpoints only
 * past WAL_BOUND_PAGES. A worker that fails hands checkpoints back to `db`. A small database (most
 * tests, a short CLI run) never starts one; an in-memory one has no WAL.
 */
export function checkpointOffThread(
  db: Database.Database,
  {
    startAtBytes = WAL_THREAD_BYTES,
    watchMs = WAL_WATCH_MS,
    everyMs = CHECKPOINT_EVERY_MS,
  }: CheckpointOptions = {},
): Checkpoints {
  const inline = db.pragma('wal_autocheckpoint', { simple: true }) as number;
  let worker: Worker | undefined;
  let exited: Promise<void> = Promise.resolve();
  let ready = false;
  let failure: string | undefined;
  let closed = false;

  const handBack = (reason: string) => {
    ready = false;
    failure ??= reason;
    if (db.open) db.pragma(`wal_autocheckpoint = ${inline}`);
  };
  const start = () => {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
        path: db.name,
        everyMs,
      },
    });
    worker.unref();
    const running = worker;
    exited = new Promise((resolve) => running.once('exit', () => resolve()));
    running.on('message', (message: unknown) => {
      if (message === 'ready') {
        if (closed || !db.open) return;
        ready = true;
        db.pragma(`wal_autocheckpoint = ${WAL_BOUND_PAGES}`);
      } else {
        handBack((message as { error: string }).error);
      }
    });
    running.once('error', (error) => handBack(error.message));
    running.once('exit', () => {
      if (ready && !closed) handBack('the checkpoint worker exited');
    });
  };

  // An in-memory database has no WAL to move.
  const watch = db.memory
    ? undefined
    : setInterval(() => {
        stat(`${db.name}-wal`, (error, file) => {
          if (error !== null || file.size < startAtBytes || worker !== undefined || closed) return;
          clearInterval(watch);
          start();
        });
      }, watchMs);
  watch?.unref();

  return {
    offThread: () => ready,
    failure: () => failure,
    async close() {
      closed = true;
      clearInterval(watch);
      const running = worker;
      if (running === undefined) return;
      running.postMessage('close');
      const timer = setTimeout(() => void running.terminate(), CLOSE_WAIT_MS);
      await exited;
      clearTimeout(timer);
      if (ready && db.open) db.pragma(`wal_autocheckpoint = ${inline}`);
      ready = false;
    },
  };
}
