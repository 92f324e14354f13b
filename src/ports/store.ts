// Batch jobs: their part of the port is in batch-store.ts; the ledger's requests and records
// are in ledger.ts.
import type { BatchStore } from './batch-store.js';
import type {
  CreditBalance,
  IdempotencyRecord,
  LedgerCommit,
  LedgerCommitOutcome,
  LedgerEntry,
  LedgerOutcome,
  LedgerRequest,
  ReservationState,
} from './ledger.js';

/** A private key (`mv_sk_`) or a public one (`mv_pk_`, single verify from trusted pages). */
export type KeyKind = 'private' | 'public';
/** The plans an account can be on; their limits live in service/plans.ts. */
export type PlanName = 'free' | 'starter' | 'professional' | 'enterprise';

export type * from './batch-store.js';
export type * from './ledger.js';

/** An account as stored: who it is, its plan and when its billing periods start. */
export interface AccountRecord {
  readonly id: string;
  readonly email: string;
  readonly plan: PlanName;
  /** Day of the month (1-31, UTC) on which billing periods start. */
  readonly billingAnchorDay: number;
  /** `whsec_` secret that signs this account's webhooks. */
  readonly webhookSecret: string;
  readonly createdAt: number;
}

/** An API key as stored: never the key itself, only its SHA-256 and what identifies it. */
export interface KeyRecord {
  readonly id: string;
  readonly accountId: string;
  readonly kind: KeyKind;
  /** Hex SHA-256 of the whole key. */
  readonly hash: string;
  readonly displayPrefix: string;
  readonly lastFour: string;
  readonly name: string | null;
  /** Private keys: CIDR ranges (canonical) the key may be used from; empty means anywhere. */
  readonly allowedIps: readonly string[];
  /** Public keys: host patterns (`example.com`, `*.example.com`) of pages that may use it. */
  readonly trustedDomains: readonly string[];
  readonly createdAt: number;
  readonly revokedAt: number | null;
  /** After a rotation the old key keeps working until then. */
  readonly expiresAt: number | null;
}

export type KeyChanges = Partial<
  Pick<KeyRecord, 'name' | 'allowedIps' | 'trustedDomains' | 'revokedAt' | 'expiresAt'>
> & {
  /**
   * The key expires by then at the latest: `expiresAt` becomes the earlier of the stored one
   * and this, decided in the store's own read-modify-write, so that two rotations at once
   * can only shorten a grace period, never extend it.
   */
  readonly expiresAtMost?: number;
};

export type FilterType = 'email' | 'domain' | 'ip_address';
export type FilterAction = 'block' | 'allow';

export interface FilterRecord {
  readonly id: string;
  readonly accountId: string;
  readonly type: FilterType;
  /** Normalized: an address, an A-label domain, or a canonical IP or CIDR range. */
  readonly value: string;
  readonly action: FilterAction;
  readonly reason: string | null;
  readonly createdAt: number;
}

/** A fixed-window counter that many processes may share. */
export interface RateCounter {
  /** Counts one request for `key`; resolves with the count in the window and its end. */
  hit(key: string): Promise<WindowCount>;
  /** The count so far without counting, or zero in a fresh window. */
  peek(key: string): Promise<WindowCount>;
}

export interface WindowCount {
  readonly count: number;
  /** Epoch milliseconds when the window ends (now, for a window not yet started). */
  readonly resetAt: number;
}

export interface FilterPage {
  readonly filters: readonly FilterRecord[];
  readonly total: number;
}

/** Prefix lengths in use by an account's IP filters, per family (see Store.ipFilterPrefixes). */
export interface IpFilterPrefixes {
  readonly v4: readonly number[];
  readonly v6: readonly number[];
}

/**
 * The Store port: everything the service keeps. Each method is atomic on its own; the ledger's
 * `applyLedger` reads and writes the balance, the reservation and the entry in one transaction.
 * Implementations: `createMemoryStore()` (mailverdict) and `createSqliteStore()`
 * (mailverdict/sqlite); both pass one contract suite.
 */
export interface Store extends BatchStore {
  insertAccount(account: AccountRecord): Promise<void>;
  getAccount(id: string): Promise<AccountRecord | undefined>;
  /** Every account, oldest first (ties by id): for the CLI's single-account files and admins. */
  listAccounts(): Promise<readonly AccountRecord[]>;
  updateAccount(
    id: string,
    changes: Partial<Pick<AccountRecord, 'email' | 'plan' | 'webhookSecret'>>,
  ): Promise<AccountRecord | undefined>;

  insertKey(key: KeyRecord): Promise<void>;
  getKey(id: string): Promise<KeyRecord | undefined>;
  findKeyByHash(hash: string): Promise<KeyRecord | undefined>;
  /** Oldest first. */
  listKeys(accountId: string): Promise<readonly KeyRecord[]>;
  updateKey(id: string, changes: KeyChanges): Promise<KeyRecord | undefined>;

  /** Applies one ledger request atomically (the rules: store/rules/ledger.ts). */
  applyLedger(accountId: string, request: LedgerRequest, at: number): Promise<LedgerOutcome>;
  /**
   * Applies several requests and an idempotency change in one transaction, all or none: the
   * first refusal writes nothing and is the answer. Resolves only once durable.
   */
  commitLedger(accountId: string, commit: LedgerCommit, at: number): Promise<LedgerCommitOutcome>;
  /** The key's record while live (younger than IDEMPOTENCY_TTL_MS at `at`). */
  idempotencyRecord(
    accountId: string,
    key: string,
    at: number,
  ): Promise<IdempotencyRecord | undefined>;
  /** Reservations still holding credits, oldest expiry first. */
  listHolds(accountId: string): Promise<readonly ReservationState[]>;
  /**
   * Releases every hold expired at `at` (each a `release` entry under `mv:expired:<ref>`)
   * and forgets idempotency keys past their 24 hours; resolves with the holds released.
   */
  sweep(at: number): Promise<number>;
  balance(accountId: string): Promise<CreditBalance>;
  /** Entries in order, from `afterSeq` (exclusive), at most `limit`. */
  ledgerEntries(
    accountId: string,
    page?: { afterSeq?: number; limit?: number },
  ): Promise<readonly LedgerEntry[]>;

  /** Inserts a filter; `duplicate` (nothing stored) when its (type, value) exists already. */
  insertFilter(filter: FilterRecord): Promise<'inserted' | 'duplicate'>;
  /** Oldest first, optionally of one type. */
  listFilters(
    accountId: string,
    query: { type?: FilterType; offset: number; limit: number },
  ): Promise<FilterPage>;
  deleteFilter(accountId: string, id: string): Promise<boolean>;
  /** Filters of `type` whose value is one of `values`; all of that type (oldest first) without. */
  findFilters(
    accountId: string,
    type: FilterType,
    values?: readonly string[],
  ): Promise<readonly FilterRecord[]>;
  /**
   * The prefix lengths the account's ip_address filters use, per family, ascending (a single
   * address counts as a /32 or /128): matching looks up the ranges of just these lengths that
   * contain an address (an index, not a scan of every filter). Both empty without IP filters.
   * Kept with the filters in the same write, so it is never stale.
   */
  ipFilterPrefixes(accountId: string): Promise<IpFilterPrefixes>;

  /** A counter for one window length; counters with the same name share their counts. */
  rateCounter(name: string, windowMs: number): RateCounter;

  close(): Promise<void>;
}
