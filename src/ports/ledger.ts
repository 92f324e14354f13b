// The credits ledger's requests, outcomes and records: what a Store files and answers.

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
 * One request to the credits ledger. Every request carries a reference unique
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
 * An idempotency key's record: the request it is bound to and, once finished,
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
