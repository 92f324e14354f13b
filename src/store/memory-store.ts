import type {
  AccountRecord,
  CreditBalance,
  FilterRecord,
  IdempotencyRecord,
  IpFilterPrefixes,
  KeyRecord,
  RateCounter,
  Store,
} from '../ports/store.js';
import {
  applyLedgerCommit,
  applyLedgerRequest,
  EMPTY_BALANCE,
  expiredHoldRelease,
  idempotencyLive,
  type LedgerBook,
} from './rules/ledger.js';
import { rangeShape } from './rules/ip-prefixes.js';
import { withKeyChanges } from './rules/key-changes.js';
import { createMemoryBatchStore } from './memory-batch-store.js';
import { LedgerColumns } from './ledger-columns.js';
import { rateCounterOver, UNLIMITED_POINTS } from './rules/rate-counter.js';
import { StoreError } from './rules/store-error.js';

interface AccountBook {
  account: AccountRecord;
  balance: CreditBalance;
  /** Entries and reservations, column by column (see LedgerColumns for why). */
  ledgerColumns: LedgerColumns;
  idempotency: Map<string, IdempotencyRecord>;
  /** The ledger's view of this account, built once. */
  ledger?: LedgerBook;
}

/** How many IP filters of an account use each prefix length, per family. */
interface IpPrefixCounts {
  readonly v4: Map<number, number>;
  readonly v6: Map<number, number>;
  /** The answer of ipFilterPrefixes, until a filter of the account changes. */
  inUse?: IpFilterPrefixes | undefined;
}

const NO_IP_PREFIXES: IpFilterPrefixes = Object.freeze({ v4: [], v6: [] });

// What the store hands out and takes in are copies, as SQLite's rows are: a host that changes
// a listed key's allow-list, a receipt's balance or a Caller's account changes nothing stored.
const copyAccount = (account: AccountRecord): AccountRecord => ({ ...account });
const copyKey = (key: KeyRecord): KeyRecord => ({
  ...key,
  allowedIps: [...key.allowedIps],
  trustedDomains: [...key.trustedDomains],
});
const copyFilter = (filter: FilterRecord): FilterRecord => ({ ...filter });
const copyBalance = (balance: CreditBalance): CreditBalance => ({ ...balance });

function countIpPrefix(
  all: Map<string, IpPrefixCounts>,
  filter: FilterRecord,
  change: 1 | -1,
): void {
  let counts = all.get(filter.accountId);
  if (counts === undefined) {
    counts = { v4: new Map(), v6: new Map() };
    all.set(filter.accountId, counts);
  }
  const { width, bits } = rangeShape(filter.value);
  const family = width === 32 ? counts.v4 : counts.v6;
  const count = (family.get(bits) ?? 0) + change;
  if (count > 0) family.set(bits, count);
  else family.delete(bits);
  counts.inUse = undefined;
  if (counts.v4.size === 0 && counts.v6.size === 0) all.delete(filter.accountId);
}

export interface MemoryStoreOptions {
  /** How often expired credit holds are released. Default 1 minute. */
  readonly holdSweepMs?: number;
}

/** Default interval of both stores' hold sweepers. */
export const HOLD_SWEEP_MS = 60_000;

/**
 * The in-memory Store: for tests, benchmarks and throwaway use. Every operation runs to the
 * end without awaiting, so each is atomic just as a SQLite transaction is.
 *
 * @example
 * const service = createService({ engine: createEngine({ offline: true }), store: createMemoryStore() });
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): Store {
  const books = new Map<string, AccountBook>();
  const keys = new Map<string, KeyRecord>();
  const keyIdByHash = new Map<string, string>();
  const filters = new Map<string, FilterRecord>();
  const filterIdByValue = new Map<string, string>();
  const ipPrefixes = new Map<string, IpPrefixCounts>();
  const filterKey = (accountId: string, type: string, value: string) =>
    `${accountId}\u0000${type}\u0000${value}`;
  const counters = new Map<string, RateCounter>();
  let seq = 0;
  let closed = false;

  function open(): void {
    if (closed) throw new StoreError('closed', 'The store is closed.');
  }

  function book(accountId: string): AccountBook | undefined {
    open();
    return books.get(accountId);
  }

  /**
   * The ledger's view of one account; writes land at once (each call runs without awaiting).
   * Built once per account: eight closures per request were a fifth of a charged verify.
   */
  function ledgerBook(found: AccountBook | undefined): LedgerBook {
    if (found === undefined) return NO_BOOK;
    return (found.ledger ??= bookOver(found));
  }

  function bookOver(found: AccountBook): LedgerBook {
    return {
      balance: () => found.balance,
      entry: (ref) => found.ledgerColumns.entry(ref),
      reservation: (ref) => found.ledgerColumns.reservation(ref),
      idempotency: (key) => found.idempotency.get(key),
      insertEntry(entry) {
        return found.ledgerColumns.append(entry, ++seq);
      },
      putReservation(reservation) {
        found.ledgerColumns.putReservation(reservation);
      },
      putBalance(balance) {
        found.balance = balance;
      },
      putIdempotency(key, record) {
        if (record === undefined) found.idempotency.delete(key);
        else found.idempotency.set(key, record);
      },
    };
  }

  /** How many filters of each type each account keeps. */
  const filterCounts = new Map<string, Record<FilterRecord['type'], number>>();
  function countFilter(filter: FilterRecord, change: 1 | -1): void {
    let counts = filterCounts.get(filter.accountId);
    if (counts === undefined) {
      counts = { email: 0, domain: 0, ip_address: 0 };
      filterCounts.set(filter.accountId, counts);
    }
    counts[filter.type] += change;
  }

  const NO_BOOK: LedgerBook = {
    balance: () => undefined,
    entry: () => undefined,
    reservation: () => undefined,
    idempotency: () => undefined,
    insertEntry() {
      throw new StoreError('not_found', 'No such account.');
    },
    putReservation() {},
    putBalance() {},
    putIdempotency() {},
  };

  const store: Store = {
    // Batch jobs, results and the webhook outbox (issue 12): memory-batch-store.ts.
    ...createMemoryBatchStore({ open, ledgerBook: (id) => ledgerBook(books.get(id)) }),

    async insertAccount(account) {
      open();
      if (books.has(account.id))
        throw new StoreError('constraint', `Account ${account.id} exists.`);
      books.set(account.id, {
        account: copyAccount(account),
        balance: EMPTY_BALANCE,
        ledgerColumns: new LedgerColumns(account.id),
        idempotency: new Map(),
      });
    },
    async getAccount(id) {
      const found = book(id);
      return found === undefined ? undefined : copyAccount(found.account);
    },
    async listAccounts() {
      open();
      return [...books.values()]
        .map(({ account }) => copyAccount(account))
        .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    },
    async updateAccount(id, changes) {
      const found = book(id);
      if (found === undefined) return undefined;
      found.account = { ...found.account, ...changes };
      return copyAccount(found.account);
    },

    async insertKey(key) {
      open();
      if (keys.has(key.id) || keyIdByHash.has(key.hash)) {
        throw new StoreError('constraint', 'A key with this id or hash exists.');
      }
      keys.set(key.id, copyKey(key));
      keyIdByHash.set(key.hash, key.id);
    },
    async getKey(id) {
      open();
      const key = keys.get(id);
      return key === undefined ? undefined : copyKey(key);
    },
    async findKeyByHash(hash) {
      open();
      const id = keyIdByHash.get(hash);
      const key = id === undefined ? undefined : keys.get(id);
      return key === undefined ? undefined : copyKey(key);
    },
    async listKeys(accountId) {
      open();
      // Oldest first, ties in insertion order (Array.prototype.sort is stable).
      return [...keys.values()]
        .filter((key) => key.accountId === accountId)
        .sort((a, b) => a.createdAt - b.createdAt)
        .map(copyKey);
    },
    async updateKey(id, changes) {
      open();
      const key = keys.get(id);
      if (key === undefined) return undefined;
      const updated = copyKey(withKeyChanges(key, changes));
      keys.set(id, updated);
      return copyKey(updated);
    },

    async applyLedger(accountId, request, at) {
      open();
      const outcome = applyLedgerRequest(accountId, request, at, ledgerBook(books.get(accountId)));
      return outcome.ok ? { ...outcome, balance: copyBalance(outcome.balance) } : outcome;
    },
    async commitLedger(accountId, commit, at) {
      open();
      const outcome = applyLedgerCommit(accountId, commit, at, ledgerBook(books.get(accountId)));
      return outcome.ok ? { ...outcome, balance: copyBalance(outcome.balance) } : outcome;
    },
    async idempotencyRecord(accountId, key, at) {
      const record = book(accountId)?.idempotency.get(key);
      return record !== undefined && idempotencyLive(record, at) ? record : undefined;
    },
    async listHolds(accountId) {
      const found = book(accountId);
      if (found === undefined) return [];
      // The order SQLite gives: expiry, then reference.
      return found.ledgerColumns
        .holds()
        .sort((a, b) => a.expiresAt - b.expiresAt || (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
    },
    async sweep(at) {
      open();
      let released = 0;
      for (const [accountId, found] of books) {
        for (const reservation of found.ledgerColumns.holds(at)) {
          applyLedgerRequest(accountId, expiredHoldRelease(reservation), at, ledgerBook(found));
          released++;
        }
        for (const [key, record] of found.idempotency) {
          if (!idempotencyLive(record, at)) found.idempotency.delete(key);
        }
      }
      return released;
    },
    async balance(accountId) {
      const found = book(accountId);
      return found === undefined ? EMPTY_BALANCE : copyBalance(found.balance);
    },
    async ledgerEntries(accountId, page = {}) {
      const columns = book(accountId)?.ledgerColumns;
      if (columns === undefined) return [];
      return columns.entries(page.afterSeq ?? 0, page.limit ?? columns.size);
    },

    async insertFilter(filter) {
      open();
      const key = filterKey(filter.accountId, filter.type, filter.value);
      if (filterIdByValue.has(key)) return 'duplicate';
      if (filters.has(filter.id)) throw new StoreError('constraint', `Filter ${filter.id} exists.`);
      filters.set(filter.id, copyFilter(filter));
      filterIdByValue.set(key, filter.id);
      countFilter(filter, 1);
      if (filter.type === 'ip_address') countIpPrefix(ipPrefixes, filter, 1);
      return 'inserted';
    },
    async listFilters(accountId, query) {
      open();
      const all = [...filters.values()].filter(
        (filter) =>
          filter.accountId === accountId &&
          (query.type === undefined || filter.type === query.type),
      );
      return {
        filters: all.slice(query.offset, query.offset + query.limit).map(copyFilter),
        total: all.length,
      };
    },
    async deleteFilter(accountId, id) {
      open();
      const filter = filters.get(id);
      if (filter === undefined || filter.accountId !== accountId) return false;
      filterIdByValue.delete(filterKey(accountId, filter.type, filter.value));
      countFilter(filter, -1);
      if (filter.type === 'ip_address') countIpPrefix(ipPrefixes, filter, -1);
      return filters.delete(id);
    },
    async findFilters(accountId, type, values) {
      open();
      // Most accounts keep few filters or none: no key to build, no lookup, on every verify.
      if ((filterCounts.get(accountId)?.[type] ?? 0) === 0) return [];
      if (values === undefined) {
        return [...filters.values()]
          .filter((f) => f.accountId === accountId && f.type === type)
          .map(copyFilter);
      }
      const found: FilterRecord[] = [];
      for (const value of values) {
        const id = filterIdByValue.get(filterKey(accountId, type, value));
        const filter = id === undefined ? undefined : filters.get(id);
        if (filter !== undefined) found.push(copyFilter(filter));
      }
      return found;
    },

    async ipFilterPrefixes(accountId) {
      open();
      const counts = ipPrefixes.get(accountId);
      if (counts === undefined) return NO_IP_PREFIXES;
      const inUse = (family: Map<number, number>) => [...family.keys()].sort((a, b) => a - b);
      // Asked on every verify that can match an IP, changed only with the filters.
      counts.inUse ??= Object.freeze({ v4: inUse(counts.v4), v6: inUse(counts.v6) });
      return counts.inUse;
    },

    rateCounter(name, windowMs) {
      const id = `${name}:${windowMs}`;
      let counter = counters.get(id);
      if (counter === undefined) {
        counter = rateCounterOver(async () => {
          const { RateLimiterMemory } = await import('rate-limiter-flexible');
          return new RateLimiterMemory({
            keyPrefix: name,
            points: UNLIMITED_POINTS,
            duration: windowMs / 1000,
          });
        });
        counters.set(id, counter);
      }
      return counter;
    },

    async close() {
      clearInterval(sweeper);
      closed = true;
    },
  };
  // Expired holds are released on an interval that never keeps the process alive: a crash
  // or a lost runner never keeps credits locked.
  const sweeper = setInterval(() => {
    if (!closed) void store.sweep(Date.now());
  }, options.holdSweepMs ?? HOLD_SWEEP_MS);
  sweeper.unref();
  return store;
}
