import type Database from 'better-sqlite3';
import type { IdempotencyRecord } from '../../ports/store.js';
import type { Row } from './schema.js';

/** The statements on `idempotency_keys`: a key's record, written in the ledger's transaction. */
export interface IdempotencyStatements {
  readonly idempotency: Database.Statement;
  readonly putIdempotency: Database.Statement;
  readonly deleteIdempotency: Database.Statement;
  readonly forgetIdempotency: Database.Statement;
}

export function prepareIdempotencyStatements(db: Database.Database): IdempotencyStatements {
  return {
    idempotency: db.prepare('SELECT * FROM idempotency_keys WHERE account_id = ? AND key = ?'),
    putIdempotency: db.prepare(
      `INSERT INTO idempotency_keys (account_id, key, fingerprint, attempt, answer, created_at,
         lease_until) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (account_id, key) DO UPDATE SET fingerprint = excluded.fingerprint,
         attempt = excluded.attempt, answer = excluded.answer, created_at = excluded.created_at,
         lease_until = excluded.lease_until`,
    ),
    deleteIdempotency: db.prepare('DELETE FROM idempotency_keys WHERE account_id = ? AND key = ?'),
    forgetIdempotency: db.prepare('DELETE FROM idempotency_keys WHERE created_at <= ?'),
  };
}

/** A row of `idempotency_keys` as a record. */
export function idempotencyFrom(row: unknown): IdempotencyRecord | undefined {
  if (row === undefined) return undefined;
  const r = row as Row;
  return {
    key: r.key as string,
    fingerprint: r.fingerprint as string,
    attempt: r.attempt as string,
    answer: r.answer as string | null,
    createdAt: r.created_at as number,
    leaseUntil: r.lease_until as number,
  };
}
