// Batch jobs (issue 12): their part of the port is in batch-store.ts.
import type { BatchStore } from './batch-store.js';

/** A private key (`mv_sk_`) or a public one (`mv_pk_`, single verify from trusted pages). */
export type KeyKind = 'private' | 'public';
/** The plans of DESIGN 5.2; their limits live in service/plans.ts. */
export type PlanName = 'free' | 'starter' | 'professional' | 'enterprise';

export type * from './batch-store.js';

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
   * can only shorten a grace period, never extend it (DESIGN 5.1).
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

/** The balances a ledger maintains, in credits. `total = available + reserved + used`. */
export interface CreditBalance {
  /** What can be spent now. Never below zero. */
  readonly available: number;
  /** Held by reservations not yet settled or released. */
  readonly reserved: number;
  /** Charged by settlements, net of refunds. */
  readonly used: number;
  /** Every credit ever granted. */
  readonly total: number;
}

/**
 * One request to the credits ledger (DESIGN 5.3). Every request carries a reference unique
 * within the account, so that a retried request finds its first entry instead of applying
 * twice.
 *
 * - grant: adds credits (a top-up, a plan's allowance).
 * - reserve: moves credits from available to a hold, refused when available is short.
 * - settle: charges part of a reservation's hold.
 * - release: returns a reservation's unsettled hold (by default all of it) at the end of work.
 * - refund: returns credits for results that could not be verified: from the hold first, then
 *   from what the reservation charged.
 */
export type LedgerRequest =
  | {
      readonly kind: 'grant';
      readonly ref: string;
      readonly amount: number;
      readonly note?: string;
    }
  | {
      readonly kind: 'reserve';
      readonly ref: string;
      readonly amount: number;
      /**
       * Epoch ms when the hold lapses: the sweeper then releases what it still holds, so a
       * crash never keeps credits locked. Default: an hour after the request (HOLD_TTL_MS).
       */
      readonly expiresAt?: number;
      readonly note?: string;
    }
  | {
      readonly kind: 'settle';
      readonly ref: string;
      readonly reservation: string;
      readonly amount: number;
      readonly note?: string;
    }
  | {
      readonly kind: 'release' | 'refund';
      readonly ref: string;
      readonly reservation: string;
      /** Default: everything the reservation can give back. */
      readonly amount?: number;
      readonly note?: string;
    };

export type LedgerRefusal =
  | {
      readonly ok: false;
      readonly code: 'insufficient_credits';
      readonly needed: number;
      readonly available: number;
    }
  | { readonly ok: false; readonly code: 'unknown_reservation'; readonly reservation: string }
  | { readonly ok: false; readonly code: 'exceeds_reservation'; readonly limit: number }
  /** The reference exists with a different request: a client bug, never applied. */
  | { readonly ok: false; readonly code: 'reference_conflict'; readonly existing: LedgerEntry }
  /** A grant would take the total past Number.MAX_SAFE_INTEGER; `limit` is what still fits. */
  | { readonly ok: false; readonly code: 'balance_limit'; readonly limit: number };

export type LedgerOutcome =
  | {
      readonly ok: true;
      readonly entry: LedgerEntry;
      readonly balance: CreditBalance;
      /** The reference had applied before: nothing changed this time. */
      readonly replayed: boolean;
    }
  | LedgerRefusal;

/** One immutable line of the ledger. */
export interface LedgerEntry {
  /** Order of entries within the store. */
  readonly seq: number;
  readonly accountId: string;
  /** Unique per account: the same reference never applies twice. */
  readonly ref: string;
  readonly kind: LedgerRequest['kind'];
  readonly amount: number;
  /** Change of `available`: the balance is the sum of these. */
  readonly delta: number;
  /** The reservation a settle, release or refund is against. */
  readonly reservation: string | null;
  readonly note: string | null;
  readonly createdAt: number;
}

/** What a reservation still holds and what it has charged. */
export interface ReservationState {
  readonly ref: string;
  readonly held: number;
  readonly charged: number;
  /** Epoch ms after which the sweeper releases what is still held. */
  readonly expiresAt: number;
}

/**
 * An idempotency key's record (DESIGN 5.3): the request it is bound to and, once finished,
 * the first answer. Live for IDEMPOTENCY_TTL_MS from `createdAt`.
 */
export interface IdempotencyRecord {
  readonly key: string;
  /** Digest of the request (method, normalized address, shape parameters). */
  readonly fingerprint: string;
  /** Which attempt holds the key: only it may finish or drop it. */
  readonly attempt: string;
  /** The first answer, serialized; null while the attempt is running. */
  readonly answer: string | null;
  readonly createdAt: number;
  /** A running attempt's lease (its hold's expiry): after it, another attempt may take over. */
  readonly leaseUntil: number;
}

/** What a ledger commit does to an idempotency key, in the same transaction. */
export type IdempotencyChange =
  /** Takes the key for `attempt` (or updates it when `attempt` holds it already). */
  | { readonly op: 'claim'; readonly record: Omit<IdempotencyRecord, 'createdAt'> }
  /** Gives the key up (the attempt failed before charging): a retry starts afresh. */
  | { readonly op: 'drop'; readonly key: string; readonly attempt: string };

/** Ledger requests applied together, all or none, with an optional idempotency change. */
export interface LedgerCommit {
  readonly requests: readonly LedgerRequest[];
  readonly idempotency?: IdempotencyChange;
}

export type LedgerCommitOutcome =
  | {
      readonly ok: true;
      /** One per request, in order. */
      readonly entries: readonly LedgerEntry[];
      readonly replayed: readonly boolean[];
      readonly balance: CreditBalance;
    }
  | LedgerRefusal
  /** Another attempt holds the key: nothing was written. */
  | { readonly ok: false; readonly code: 'idempotency_taken'; readonly record: IdempotencyRecord };

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
   * contain an address (DESIGN 5.4: an index, not a scan). Both empty without IP filters.
   * Kept with the filters in the same write, so it is never stale.
   */
  ipFilterPrefixes(accountId: string): Promise<IpFilterPrefixes>;

  /** A counter for one window length; counters with the same name share their counts. */
  rateCounter(name: string, windowMs: number): RateCounter;

  close(): Promise<void>;
}
