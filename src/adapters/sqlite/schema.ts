import Database from 'better-sqlite3';
import { StoreError } from '../../store/rules/store-error.js';

/** A row as better-sqlite3 returns it, before it is read into a record. */
export type Row = Record<string, unknown>;

/**
 * Versioned migrations, applied in order inside one transaction each; `PRAGMA user_version`
 * records the last one applied. Append, never edit: a file in the field has run the old ones.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    plan TEXT NOT NULL,
    billing_anchor_day INTEGER NOT NULL CHECK (billing_anchor_day BETWEEN 1 AND 31),
    webhook_secret TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    available INTEGER NOT NULL DEFAULT 0 CHECK (available >= 0),
    reserved INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    used INTEGER NOT NULL DEFAULT 0 CHECK (used >= 0),
    total INTEGER NOT NULL DEFAULT 0 CHECK (total >= 0)
  );
  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    kind TEXT NOT NULL CHECK (kind IN ('private', 'public')),
    hash TEXT NOT NULL UNIQUE,
    display_prefix TEXT NOT NULL,
    last_four TEXT NOT NULL,
    name TEXT,
    allowed_ips TEXT NOT NULL,
    trusted_domains TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER,
    expires_at INTEGER
  );
  CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at);
  CREATE TABLE ledger_entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    ref TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('grant', 'reserve', 'settle', 'release', 'refund')),
    amount INTEGER NOT NULL CHECK (amount > 0),
    delta INTEGER NOT NULL,
    reservation TEXT,
    note TEXT,
    created_at INTEGER NOT NULL,
    UNIQUE (account_id, ref)
  );
  -- The ledger is append-only: the database itself refuses to rewrite history.
  CREATE TRIGGER ledger_entries_no_update BEFORE UPDATE ON ledger_entries
    BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
  CREATE TRIGGER ledger_entries_no_delete BEFORE DELETE ON ledger_entries
    BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
  CREATE TABLE reservations (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    ref TEXT NOT NULL,
    held INTEGER NOT NULL CHECK (held >= 0),
    charged INTEGER NOT NULL CHECK (charged >= 0),
    PRIMARY KEY (account_id, ref)
  ) WITHOUT ROWID;
  CREATE TABLE filters (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    type TEXT NOT NULL CHECK (type IN ('email', 'domain', 'ip_address')),
    value TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('block', 'allow')),
    reason TEXT,
    created_at INTEGER NOT NULL,
    UNIQUE (account_id, type, value)
  );
  -- rate-limiter-flexible's RateLimiterSQLite table, created here so it is versioned too.
  CREATE TABLE rate_limits (key TEXT PRIMARY KEY, points INTEGER NOT NULL DEFAULT 0, expire INTEGER);
  `,
  // 2: the prefix lengths each account's IP filters use, kept by triggers in the same write as
  // the filters, so that matching looks up only ranges of lengths in use instead
  // of reading every IP filter. Family and length are read off the canonical value: an IPv6
  // range has a colon, a bare address is a /32 or /128.
  `
  ALTER TABLE filters ADD COLUMN ip_family INTEGER GENERATED ALWAYS AS (
    CASE WHEN type <> 'ip_address' THEN NULL WHEN instr(value, ':') > 0 THEN 6 ELSE 4 END
  ) VIRTUAL;
  ALTER TABLE filters ADD COLUMN ip_bits INTEGER GENERATED ALWAYS AS (
    CASE WHEN type <> 'ip_address' THEN NULL
      WHEN instr(value, '/') > 0 THEN CAST(substr(value, instr(value, '/') + 1) AS INTEGER)
      WHEN instr(value, ':') > 0 THEN 128 ELSE 32 END
  ) VIRTUAL;
  CREATE TABLE filter_ip_prefixes (
    account_id TEXT NOT NULL,
    family INTEGER NOT NULL CHECK (family IN (4, 6)),
    bits INTEGER NOT NULL,
    filters INTEGER NOT NULL CHECK (filters > 0),
    PRIMARY KEY (account_id, family, bits)
  ) WITHOUT ROWID;
  CREATE TRIGGER filters_ip_prefix_insert AFTER INSERT ON filters WHEN NEW.type = 'ip_address'
  BEGIN
    INSERT INTO filter_ip_prefixes (account_id, family, bits, filters)
      VALUES (NEW.account_id, NEW.ip_family, NEW.ip_bits, 1)
      ON CONFLICT (account_id, family, bits) DO UPDATE SET filters = filters + 1;
  END;
  CREATE TRIGGER filters_ip_prefix_delete AFTER DELETE ON filters WHEN OLD.type = 'ip_address'
  BEGIN
    DELETE FROM filter_ip_prefixes WHERE account_id = OLD.account_id
      AND family = OLD.ip_family AND bits = OLD.ip_bits AND filters = 1;
    UPDATE filter_ip_prefixes SET filters = filters - 1 WHERE account_id = OLD.account_id
      AND family = OLD.ip_family AND bits = OLD.ip_bits;
  END;
  INSERT INTO filter_ip_prefixes (account_id, family, bits, filters)
    SELECT account_id, ip_family, ip_bits, count(*) FROM filters
    WHERE type = 'ip_address' GROUP BY account_id, ip_family, ip_bits;
  `,
  // 3: expiring holds and idempotency keys. Holds from before carry no expiry
  // (NULL): the first sweep releases them, so a crash of an older version locks nothing.
  `
  ALTER TABLE reservations ADD COLUMN expires_at INTEGER;
  CREATE INDEX reservations_expiring ON reservations (expires_at) WHERE held > 0;
  CREATE TABLE idempotency_keys (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    attempt TEXT NOT NULL,
    answer TEXT,
    created_at INTEGER NOT NULL,
    lease_until INTEGER NOT NULL,
    PRIMARY KEY (account_id, key)
  ) WITHOUT ROWID;
  CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
  `,
  // 4: batch jobs, their results and the webhook outbox (batch-store.ts): jobs with their
  // counters, one row per input position (the address, then its result), and the outbox.
  `
  CREATE TABLE batch_jobs (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    method TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('processing', 'completed', 'failed')),
    total_emails INTEGER NOT NULL,
    billable INTEGER NOT NULL,
    cost INTEGER NOT NULL,
    reservation TEXT,
    holds INTEGER NOT NULL,
    callback_url TEXT,
    processed INTEGER NOT NULL DEFAULT 0,
    valid INTEGER NOT NULL DEFAULT 0,
    invalid INTEGER NOT NULL DEFAULT 0,
    risky INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    completed_at INTEGER,
    failure_reason TEXT,
    purge_at INTEGER
  );
  CREATE INDEX batch_jobs_by_status ON batch_jobs (status, created_at);
  CREATE INDEX batch_jobs_purge ON batch_jobs (purge_at) WHERE purge_at IS NOT NULL;
  CREATE TABLE batch_items (
    job_id TEXT NOT NULL REFERENCES batch_jobs (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    email TEXT NOT NULL,
    billable INTEGER NOT NULL,
    duplicate_of INTEGER,
    record TEXT,
    state TEXT CHECK (state IN ('deliverable', 'undeliverable', 'risky')),
    PRIMARY KEY (job_id, position)
  ) WITHOUT ROWID;
  CREATE INDEX batch_items_duplicates ON batch_items (job_id, duplicate_of)
    WHERE duplicate_of IS NOT NULL;
  CREATE TABLE batch_webhooks (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    job_id TEXT NOT NULL,
    url TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    last_error TEXT,
    created_at INTEGER NOT NULL
  );
  CREATE INDEX batch_webhooks_due ON batch_webhooks (next_attempt_at) WHERE status = 'pending';
  CREATE INDEX batch_webhooks_by_job ON batch_webhooks (job_id);
`,
  // 5: what a job's processes must agree on, decided at submission and kept with the job: the
  // base URL of its download_url (NULL: none configured, a path) and its callback policy.
  // Rows from before have NULL policy columns, and are read with the reading process's own.
  `
  ALTER TABLE batch_jobs ADD COLUMN base_url TEXT;
  ALTER TABLE batch_jobs ADD COLUMN allow_http_callbacks INTEGER;
  ALTER TABLE batch_jobs ADD COLUMN allow_private_callbacks INTEGER;
  `,
  // 6: deliveries an operator can see: the status the last attempt was answered with (NULL:
  // none, or a row from before), and an account's webhooks newest first (webhooks list).
  `
  ALTER TABLE batch_webhooks ADD COLUMN last_status INTEGER;
  CREATE INDEX batch_webhooks_by_account ON batch_webhooks (account_id, created_at DESC, id DESC);
  `,
];

/**
 * Opens the file in WAL mode with the schema migrated to `MIGRATIONS`; `maxSizeBytes` caps the
 * file as a full disk would.
 */
export function openDatabase(
  path: string,
  busyTimeoutMs: number,
  maxSizeBytes: number | undefined,
): Database.Database {
  const db = new Database(path, { timeout: busyTimeoutMs });
  try {
    // A damaged or foreign file fails here, at open, rather than at the first payment.
    db.pragma('journal_mode = WAL');
    // NORMAL in WAL mode survives a killed process (the WAL is fsynced at checkpoints).
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    migrate(db);
    if (maxSizeBytes !== undefined) {
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      db.pragma(`max_page_count = ${Math.max(1, Math.floor(maxSizeBytes / pageSize))}`);
    }
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

function migrate(db: Database.Database): void {
  const apply = db.transaction(() => {
    // Read inside the write transaction: two processes opening a new file migrate once.
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > MIGRATIONS.length) {
      throw new StoreError(
        'invalid',
        `The database is at schema version ${version}, newer than this mailverdict (${MIGRATIONS.length}).`,
      );
    }
    for (let next = version; next < MIGRATIONS.length; next++) {
      db.exec(MIGRATIONS[next] as string);
      db.pragma(`user_version = ${next + 1}`);
    }
  });
  apply.immediate();
}
