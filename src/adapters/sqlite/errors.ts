import type { StoreErrorCode } from '../../store/rules/store-error.js';
import { StoreError } from '../../store/rules/store-error.js';

/** Runs a database call, turning SQLite's failures into StoreErrors that say what happened. */
export function guard<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw storeErrorOf(error);
  }
}

const SQLITE_CODES: readonly (readonly [string, StoreErrorCode, string])[] = [
  ['SQLITE_BUSY', 'busy', 'The database is locked by another connection; try again.'],
  ['SQLITE_LOCKED', 'busy', 'The database is locked by another connection; try again.'],
  ['SQLITE_FULL', 'full', 'The database or its disk is full; nothing was written.'],
  ['SQLITE_CORRUPT', 'corrupt', 'The database file is damaged; nothing was written.'],
  ['SQLITE_NOTADB', 'corrupt', 'The file is not a mailverdict SQLite database.'],
  ['SQLITE_READONLY', 'readonly', 'The database file is read-only; nothing was written.'],
  ['SQLITE_CANTOPEN', 'io', 'The database file could not be opened.'],
  ['SQLITE_IOERR', 'io', 'The database file could not be read or written.'],
  ['SQLITE_CONSTRAINT', 'constraint', 'The change would break a rule of the database.'],
];

export function storeErrorOf(error: unknown): unknown {
  if (error instanceof StoreError) return error;
  if (error instanceof TypeError && /database connection is not open/i.test(error.message)) {
    return new StoreError('closed', 'The store is closed.', { cause: error });
  }
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return error;
  const known = SQLITE_CODES.find(([prefix]) => code.startsWith(prefix));
  if (known === undefined) return error;
  return new StoreError(known[1], known[2], { cause: error });
}
