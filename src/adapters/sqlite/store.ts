import type { RateCounter, Store } from '../../ports/store.js';
import { sqliteAccounts } from './accounts.js';
import { createSqliteBatchStore } from './batch-store.js';
import { checkpointOffThread } from './checkpoints.js';
import { guard } from './errors.js';
import { sqliteFilters } from './filters.js';
import { sqliteLedger, sweepHoldsEvery } from './ledger.js';
import { rateWindow, sqliteRateCounter, sweepEndedWindows } from './rate-window.js';
import { MIGRATIONS, openDatabase } from './schema.js';
import { SLICE_MS } from '../../slices.js';

export { MIGRATIONS };

export interface SqliteStoreOptions {
  /**
   * How long a write waits for another connection's lock (another process on the same file)
   * before failing with a `busy` StoreError. Default 5000 ms.
   */
  readonly busyTimeoutMs?: number;
  /**
   * A cap on the database file's size: writes past it fail with a `full` StoreError, as on a
   * full disk, and change nothing. Default: SQLite's own limit.
   */
  readonly maxSizeBytes?: number;
  /**
   * How often rate-limit windows that have ended are deleted: one row per key and window, and
   * per public-key end user and day, would otherwise pile up. Default 5 minutes; 0 never.
   */
  readonly rateLimitSweepMs?: number;
  /**
   * How often expired credit holds are released; they are also released when
   * the store opens. Default 1 minute; 0 only at open.
   */
  readonly holdSweepMs?: number;
  /**
   * How long one transaction writing a large batch job's items may hold the event loop, in
   * milliseconds: a job of more than JOB_ITEMS_AT_ONCE addresses is written in transactions
   * of about this long, requests served between them. Default SLICE_MS (5).
   */
  readonly sliceMs?: number;
}

export const SQLITE_BUSY_TIMEOUT_MS = 5000;
export const RATE_LIMIT_SWEEP_MS = 5 * 60_000;
export const HOLD_SWEEP_MS = 60_000;

/**
 * The SQLite Store on better-sqlite3: one file, WAL (readers never wait for the writer), a
 * busy timeout for other processes on the same file, migrations from `MIGRATIONS`. Every
 * ledger request is one IMMEDIATE transaction, so two processes cannot both spend the last
 * credit. A locked, full, read-only or damaged file fails with a StoreError and writes nothing.
 *
 * @example
 * import { createSqliteStore } from 'mailverdict/sqlite';
 * const store = createSqliteStore('./mailverdict.db');
 */
export function createSqliteStore(path: string, options: SqliteStoreOptions = {}): Store {
  const db = guard(() =>
    openDatabase(path, options.busyTimeoutMs ?? SQLITE_BUSY_TIMEOUT_MS, options.maxSizeBytes),
  );
  // Checkpoints copy the WAL into the file with fsyncs: a worker thread's work once it grows.
  const checkpoints = checkpointOffThread(db);
  const counters = new Map<string, RateCounter>();
  const rates = rateWindow(db);
  const stopSweeping = sweepEndedWindows(db, options.rateLimitSweepMs ?? RATE_LIMIT_SWEEP_MS);
  /**
   * A write other than a rate count: commits the open rate-count window first, so that it
   * runs in a transaction of its own and is durable when it resolves, as before.
   */
  const guardWrite = <T>(work: () => T): T =>
    guard(() => {
      rates.close();
      return work();
    });

  const ledger = sqliteLedger(db, rates);
  const filters = sqliteFilters(db, guardWrite);
  const stopSweepingHolds = sweepHoldsEvery(
    (at) => ledger.sweepNow(at),
    options.holdSweepMs ?? HOLD_SWEEP_MS,
  );

  return {
    // Batch jobs, results and the webhook outbox: batch-store.ts.
    ...createSqliteBatchStore(db, ledger.book, guardWrite, options.sliceMs ?? SLICE_MS),
    ...sqliteAccounts(db, guardWrite),
    ...ledger.methods,
    ...filters,

    rateCounter(name, windowMs) {
      const id = `${name}:${windowMs}`;
      let counter = counters.get(id);
      if (counter === undefined) {
        counter = sqliteRateCounter(db, rates, name, windowMs);
        counters.set(id, counter);
      }
      return counter;
    },

    async close() {
      if (db.open) {
        ledger.flushNow();
        rates.close();
      }
      stopSweeping();
      stopSweepingHolds();
      await checkpoints.close();
      if (db.open) db.close();
    },
  };
}
