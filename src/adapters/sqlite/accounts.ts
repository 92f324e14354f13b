import type Database from 'better-sqlite3';
import type { AccountRecord, KeyRecord, Store } from '../../ports/store.js';
import { withKeyChanges } from '../../store/rules/key-changes.js';
import { guard } from './errors.js';
import type { Row } from './schema.js';

/** The accounts and API keys part of the SQLite Store. */
export function sqliteAccounts(
  db: Database.Database,
  guardWrite: <T>(work: () => T) => T,
): Pick<
  Store,
  | 'insertAccount'
  | 'getAccount'
  | 'listAccounts'
  | 'updateAccount'
  | 'insertKey'
  | 'getKey'
  | 'findKeyByHash'
  | 'listKeys'
  | 'updateKey'
> {
  const statements = guard(() => prepareAccountStatements(db));
  const inTransaction = <T>(work: () => T): T => db.transaction(work).immediate();
  return {
    async insertAccount(account) {
      guardWrite(() =>
        statements.insertAccount.run(
          account.id,
          account.email,
          account.plan,
          account.billingAnchorDay,
          account.webhookSecret,
          account.createdAt,
        ),
      );
    },
    async getAccount(id) {
      return accountFrom(guard(() => statements.account.get(id)));
    },
    async listAccounts() {
      const rows = guard(() => statements.accounts.all());
      return rows.map((row) => accountFrom(row) as AccountRecord);
    },
    async updateAccount(id, changes) {
      // Read and write in one transaction: another process's change is not lost between them.
      return guardWrite(() =>
        inTransaction(() => {
          const current = accountFrom(statements.account.get(id));
          if (current === undefined) return undefined;
          const updated = { ...current, ...changes };
          statements.updateAccount.run(updated.email, updated.plan, updated.webhookSecret, id);
          return updated;
        }),
      );
    },

    async insertKey(key) {
      guardWrite(() =>
        statements.insertKey.run(
          key.id,
          key.accountId,
          key.kind,
          key.hash,
          key.displayPrefix,
          key.lastFour,
          key.name,
          JSON.stringify(key.allowedIps),
          JSON.stringify(key.trustedDomains),
          key.createdAt,
          key.revokedAt,
          key.expiresAt,
        ),
      );
    },
    async getKey(id) {
      return keyFrom(guard(() => statements.key.get(id)));
    },
    async findKeyByHash(hash) {
      return keyFrom(guard(() => statements.keyByHash.get(hash)));
    },
    async listKeys(accountId) {
      return guard(() => statements.keysOf.all(accountId)).map((row) => keyFrom(row) as KeyRecord);
    },
    async updateKey(id, changes) {
      return guardWrite(() =>
        inTransaction(() => {
          const current = keyFrom(statements.key.get(id));
          if (current === undefined) return undefined;
          const updated = withKeyChanges(current, changes);
          statements.updateKey.run(
            updated.name,
            JSON.stringify(updated.allowedIps),
            JSON.stringify(updated.trustedDomains),
            updated.revokedAt,
            updated.expiresAt,
            id,
          );
          return updated;
        }),
      );
    },
  };
}

function prepareAccountStatements(db: Database.Database) {
  return {
    insertAccount: db.prepare(
      `INSERT INTO accounts (id, email, plan, billing_anchor_day, webhook_secret, created_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    account: db.prepare('SELECT * FROM accounts WHERE id = ?'),
    accounts: db.prepare('SELECT * FROM accounts ORDER BY created_at, id'),
    updateAccount: db.prepare(
      'UPDATE accounts SET email = ?, plan = ?, webhook_secret = ? WHERE id = ?',
    ),
    insertKey: db.prepare(
      `INSERT INTO api_keys (id, account_id, kind, hash, display_prefix, last_four, name,
         allowed_ips, trusted_domains, created_at, revoked_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    key: db.prepare('SELECT * FROM api_keys WHERE id = ?'),
    keyByHash: db.prepare('SELECT * FROM api_keys WHERE hash = ?'),
    keysOf: db.prepare('SELECT * FROM api_keys WHERE account_id = ? ORDER BY created_at, rowid'),
    updateKey: db.prepare(
      `UPDATE api_keys SET name = ?, allowed_ips = ?, trusted_domains = ?, revoked_at = ?,
         expires_at = ? WHERE id = ?`,
    ),
  };
}

function accountFrom(row: unknown): AccountRecord | undefined {
  if (row === undefined) return undefined;
  const r = row as Row;
  return {
    id: r.id as string,
    email: r.email as string,
    plan: r.plan as AccountRecord['plan'],
    billingAnchorDay: r.billing_anchor_day as number,
    webhookSecret: r.webhook_secret as string,
    createdAt: r.created_at as number,
  };
}

function keyFrom(row: unknown): KeyRecord | undefined {
  if (row === undefined) return undefined;
  const r = row as Row;
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    kind: r.kind as KeyRecord['kind'],
    hash: r.hash as string,
    displayPrefix: r.display_prefix as string,
    lastFour: r.last_four as string,
    name: r.name as string | null,
    allowedIps: JSON.parse(r.allowed_ips as string) as string[],
    trustedDomains: JSON.parse(r.trusted_domains as string) as string[],
    createdAt: r.created_at as number,
    revokedAt: r.revoked_at as number | null,
    expiresAt: r.expires_at as number | null,
  };
}
