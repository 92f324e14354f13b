/**
 * mailverdict/sqlite: the durable Store on better-sqlite3, kept out of the main entry so that
 * the engine and the service never require the native module. Install `better-sqlite3`
 * (major 12) beside mailverdict to use it.
 */
export { createSqliteStore, MIGRATIONS, SQLITE_BUSY_TIMEOUT_MS } from './adapters/sqlite/store.js';
export type { SqliteStoreOptions } from './adapters/sqlite/store.js';
