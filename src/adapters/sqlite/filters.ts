import type Database from 'better-sqlite3';
import type { FilterRecord, FilterType, Store } from '../../ports/store.js';
import { guard } from './errors.js';
import type { Row } from './schema.js';

/**
 * The filters part of the SQLite Store: an account's block and allow filters, and the IP
 * prefix lengths in use that the schema's triggers keep beside them.
 */
export function sqliteFilters(
  db: Database.Database,
  guardWrite: <T>(work: () => T) => T,
): Pick<
  Store,
  'insertFilter' | 'listFilters' | 'deleteFilter' | 'ipFilterPrefixes' | 'findFilters'
> {
  const statements = guard(() => prepareFilterStatements(db));
  const filterTypes = guard(() => filterTypesOf(db));
  return {
    async insertFilter(filter) {
      return guardWrite(() => {
        const result = statements.insertFilter.run(
          filter.id,
          filter.accountId,
          filter.type,
          filter.value,
          filter.action,
          filter.reason,
          filter.createdAt,
        );
        filterTypes.forget(filter.accountId);
        return result.changes === 1 ? 'inserted' : 'duplicate';
      });
    },
    async listFilters(accountId, query) {
      return guard(() => {
        const type = query.type ?? null;
        const { total } = statements.countFilters.get(accountId, type, type) as { total: number };
        const rows = statements.pageFilters.all(accountId, type, type, query.limit, query.offset);
        return { filters: rows.map((row) => filterFrom(row)), total };
      });
    },
    async deleteFilter(accountId, id) {
      return guardWrite(() => {
        filterTypes.forget(accountId);
        return statements.deleteFilter.run(id, accountId).changes === 1;
      });
    },
    async ipFilterPrefixes(accountId) {
      return guard(() => {
        const rows = statements.ipFilterPrefixes.all(accountId) as {
          family: number;
          bits: number;
        }[];
        return {
          v4: rows.filter((row) => row.family === 4).map((row) => row.bits),
          v6: rows.filter((row) => row.family === 6).map((row) => row.bits),
        };
      });
    },
    async findFilters(accountId, type, values) {
      if (values === undefined) {
        return guard(() => statements.filtersOfType.all(accountId, type).map(filterFrom));
      }
      if (values.length === 0 || !guard(() => filterTypes.has(accountId, type))) return [];
      // An address's filter is one value: by the unique index, without json_each (1.8 us
      // against 3.2 us a lookup on an account without filters, measured with better-sqlite3).
      if (values.length === 1) {
        return guard(() => statements.findFilter.all(accountId, type, values[0]).map(filterFrom));
      }
      return guard(() =>
        statements.findFilters.all(accountId, type, JSON.stringify(values)).map(filterFrom),
      );
    },
  };
}

function prepareFilterStatements(db: Database.Database) {
  return {
    insertFilter: db.prepare(
      `INSERT INTO filters (id, account_id, type, value, action, reason, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (account_id, type, value) DO NOTHING`,
    ),
    countFilters: db.prepare(
      'SELECT count(*) AS total FROM filters WHERE account_id = ? AND (? IS NULL OR type = ?)',
    ),
    pageFilters: db.prepare(
      `SELECT * FROM filters WHERE account_id = ? AND (? IS NULL OR type = ?)
       ORDER BY seq LIMIT ? OFFSET ?`,
    ),
    deleteFilter: db.prepare('DELETE FROM filters WHERE id = ? AND account_id = ?'),
    ipFilterPrefixes: db.prepare(
      'SELECT family, bits FROM filter_ip_prefixes WHERE account_id = ? ORDER BY family, bits',
    ),
    filtersOfType: db.prepare(
      'SELECT * FROM filters WHERE account_id = ? AND type = ? ORDER BY seq',
    ),
    findFilter: db.prepare('SELECT * FROM filters WHERE account_id = ? AND type = ? AND value = ?'),
    findFilters: db.prepare(
      `SELECT * FROM filters WHERE account_id = ? AND type = ?
         AND value IN (SELECT value FROM json_each(?)) ORDER BY seq`,
    ),
  };
}

/** Past this many accounts the filter types are read afresh: memory stays bounded. */
const FILTER_TYPES_MAX_ACCOUNTS = 10_000;

/**
 * Which types of filter each account has, so that matching an address for an account with no
 * filter of a type (most accounts, most types) reads nothing: the email and domain lookups
 * were 10% of the CPU profile of a charged verify on SQLite (called in process, 50 at a time;
 * 4-5 us of 47). The answer stands while no other connection commits: `PRAGMA data_version`
 * moves on each commit by another connection (another process on the file, say the CLI
 * adding a filter beside `serve`), never on this one's, whose filter writes forget the account.
 */
function filterTypesOf(db: Database.Database) {
  const dataVersion = db.prepare('PRAGMA data_version').pluck();
  const present = db.prepare(
    `SELECT EXISTS (SELECT 1 FROM filters WHERE account_id = @account AND type = 'email') AS email,
       EXISTS (SELECT 1 FROM filters WHERE account_id = @account AND type = 'domain') AS domain,
       EXISTS (SELECT 1 FROM filters WHERE account_id = @account AND type = 'ip_address') AS ip_address`,
  );
  const known = new Map<string, Readonly<Record<FilterType, 0 | 1>>>();
  let version: unknown;
  return {
    has(accountId: string, type: FilterType): boolean {
      const current = dataVersion.get();
      if (current !== version) {
        known.clear();
        version = current;
      }
      let types = known.get(accountId);
      if (types === undefined) {
        types = present.get({ account: accountId }) as Record<FilterType, 0 | 1>;
        if (known.size >= FILTER_TYPES_MAX_ACCOUNTS) known.clear();
        known.set(accountId, types);
      }
      return types[type] === 1;
    },
    forget(accountId: string): void {
      known.delete(accountId);
    },
  };
}

function filterFrom(row: unknown): FilterRecord {
  const r = row as Row;
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    type: r.type as FilterRecord['type'],
    value: r.value as string,
    action: r.action as FilterRecord['action'],
    reason: r.reason as string | null,
    createdAt: r.created_at as number,
  };
}
