import type {
  CreditBalance,
  IdempotencyChange,
  IdempotencyRecord,
  LedgerCommit,
  LedgerCommitOutcome,
  LedgerEntry,
  LedgerOutcome,
  LedgerRefusal,
  LedgerRequest,
  ReservationState,
} from '../../ports/store.js';
import { StoreError } from './store-error.js';

// The request and outcome types live with the Store port, which files them.
export type { LedgerOutcome, LedgerRefusal, LedgerRequest } from '../../ports/store.js';

/**
 * One account's side of a store, read and written inside the store's transaction: what
 * `applyLedgerCommit` needs to decide requests and file them.
 */
export interface LedgerBook {
  /** The account's balance, or undefined when there is no such account. */
  balance(): CreditBalance | undefined;
  /** The entry filed under `ref`, if any. */
  entry(ref: string): LedgerEntry | undefined;
  reservation(ref: string): ReservationState | undefined;
  /** The key's record, live or not (the rules here decide what a dead one means). */
  idempotency(key: string): IdempotencyRecord | undefined;
  /** Appends an entry; returns it as filed, with its seq. */
  insertEntry(entry: Omit<LedgerEntry, 'seq'>): LedgerEntry;
  putReservation(reservation: ReservationState): void;
  putBalance(balance: CreditBalance): void;
  /** Stores the key's record, or deletes it (undefined). */
  putIdempotency(key: string, record: IdempotencyRecord | undefined): void;
}

interface LedgerSnapshot {
  readonly balance: CreditBalance;
  readonly existing: LedgerEntry | undefined;
  readonly reservation: ReservationState | undefined;
}

/** What applying one request changes. */
interface LedgerWrite {
  readonly entry: Omit<LedgerEntry, 'seq'>;
  readonly balance: CreditBalance;
  /** The reservation as it stands afterwards (none for a grant). */
  readonly reservation: ReservationState | undefined;
}

export const EMPTY_BALANCE: CreditBalance = Object.freeze({
  available: 0,
  reserved: 0,
  used: 0,
  total: 0,
});

/**
 * Largest single amount: Number.MAX_SAFE_INTEGER, past which sums lose exactness. Balances are
 * bounded by it too (a grant that would take the total past it is refused), so every sum the
 * ledger forms (available + amount, reserved + amount, used + amount) stays exact.
 */
export const MAX_LEDGER_AMOUNT = Number.MAX_SAFE_INTEGER;
/** A reserve without `expiresAt` holds for this long. */
export const HOLD_TTL_MS = 3_600_000;
/** An idempotency key binds its request and answer for 24 hours, as Stripe's do. */
export const IDEMPOTENCY_TTL_MS = 86_400_000;
/**
 * The service's own references start with this; callers' references may not,
 * so nothing a caller sends can collide with them.
 */
export const SERVICE_REF_PREFIX = 'mv:';
/** Longest reference a store files: a caller's 200 characters plus a service prefix. */
const MAX_REF_LENGTH = 256;

/** The reference of the release that ends an expired hold. */
export const expiredHoldRef = (reservation: string) =>
  `${SERVICE_REF_PREFIX}expired:${reservation}`;

/** Whether a key's record still binds the key at `at`. */
export function idempotencyLive(record: IdempotencyRecord, at: number): boolean {
  return at - record.createdAt < IDEMPOTENCY_TTL_MS;
}

/**
 * Applies one ledger request to an account's book: the whole of the ledger's rules, shared by
 * every store so that memory and SQLite cannot disagree. Stores call it synchronously inside
 * their transaction. A malformed request or an unknown account throws a StoreError before
 * anything is read or written.
 */
export function applyLedgerRequest(
  accountId: string,
  request: LedgerRequest,
  at: number,
  book: LedgerBook,
): LedgerOutcome {
  return requestOutcome(applyLedgerCommit(accountId, { requests: [request] }, at, book));
}

/** The outcome of a commit of one request, as the outcome of that request. */
export function requestOutcome(outcome: LedgerCommitOutcome): LedgerOutcome {
  if (!outcome.ok) return outcome as LedgerRefusal;
  return {
    ok: true,
    entry: outcome.entries[0] as LedgerEntry,
    balance: outcome.balance,
    replayed: outcome.replayed[0] as boolean,
  };
}

/**
 * Applies a commit: its requests in order, each seeing the ones before, then its idempotency
 * change; all or none. Everything is decided against an overlay of the book before the first
 * write, so a refusal leaves the book untouched in every store.
 */
export function applyLedgerCommit(
  accountId: string,
  commit: LedgerCommit,
  at: number,
  book: LedgerBook,
): LedgerCommitOutcome {
  const problem = commitProblem(commit);
  if (problem !== undefined) throw new StoreError('invalid', problem);
  const start = book.balance();
  if (start === undefined) throw new StoreError('not_found', `No account ${accountId}.`);

  const change = commit.idempotency;
  if (change?.op === 'claim') {
    const held = book.idempotency(change.record.key);
    if (held !== undefined && !claimable(held, change.record, at)) {
      return { ok: false, code: 'idempotency_taken', record: held };
    }
  }

  let balance = start;
  // A commit touches a reservation or two: a list is cheaper than a Map here.
  const reservations: ReservationState[] = [];
  const results: (LedgerEntry | Omit<LedgerEntry, 'seq'>)[] = [];
  const replayed: boolean[] = [];
  for (const request of commit.requests) {
    const reservationRef = 'reservation' in request ? request.reservation : undefined;
    const plan = planLedger(
      accountId,
      request,
      {
        balance,
        // A ref appears once per commit (commitProblem), so an existing entry is a filed one.
        existing: book.entry(request.ref),
        reservation:
          reservationRef === undefined
            ? undefined
            : (latest(reservations, reservationRef) ?? book.reservation(reservationRef)),
      },
      at,
    );
    if ('replay' in plan) {
      results.push(plan.replay);
      replayed.push(true);
      continue;
    }
    if (!('write' in plan)) return plan;
    const { entry, reservation } = plan.write;
    balance = plan.write.balance;
    if (reservation !== undefined) {
      let index = 0;
      while (index < reservations.length && reservations[index]?.ref !== reservation.ref) index++;
      reservations[index] = reservation;
    }
    results.push(entry);
    replayed.push(false);
  }

  // Decided: now write, entries in order, each reservation and the balance once.
  const entries = results.map((entry) => ('seq' in entry ? entry : book.insertEntry(entry)));
  for (const reservation of reservations) book.putReservation(reservation);
  if (balance !== start) book.putBalance(balance);
  if (change !== undefined) writeIdempotency(book, change, at);
  return { ok: true, entries, replayed, balance };
}

function latest(
  reservations: readonly ReservationState[],
  ref: string,
): ReservationState | undefined {
  for (const reservation of reservations) if (reservation.ref === ref) return reservation;
  return undefined;
}

function claimable(
  held: IdempotencyRecord,
  claim: Pick<IdempotencyRecord, 'attempt' | 'fingerprint'>,
  at: number,
): boolean {
  if (held.attempt === claim.attempt || !idempotencyLive(held, at)) return true;
  // A running attempt whose lease ran out died with its process: the same request may take
  // over; a different one stays refused for the key's 24 hours.
  return held.answer === null && held.leaseUntil <= at && held.fingerprint === claim.fingerprint;
}

function writeIdempotency(book: LedgerBook, change: IdempotencyChange, at: number): void {
  if (change.op === 'drop') {
    if (book.idempotency(change.key)?.attempt === change.attempt) {
      book.putIdempotency(change.key, undefined);
    }
    return;
  }
  const held = book.idempotency(change.record.key);
  const createdAt =
    held !== undefined && held.attempt === change.record.attempt ? held.createdAt : at;
  book.putIdempotency(change.record.key, { ...change.record, createdAt });
}

/**
 * Releases what `reservation` still holds because its hold expired: the sweeper's request,
 * under a reference of the service's namespace.
 */
export function expiredHoldRelease(reservation: ReservationState): LedgerRequest {
  return {
    kind: 'release',
    ref: expiredHoldRef(reservation.ref),
    reservation: reservation.ref,
    note: 'hold expired',
  };
}

/** Decides one well-formed request against what the book holds. */
function planLedger(
  accountId: string,
  request: LedgerRequest,
  snapshot: LedgerSnapshot,
  at: number,
): { replay: LedgerEntry } | { write: LedgerWrite } | LedgerRefusal {
  const { existing, balance } = snapshot;
  if (existing !== undefined) {
    if (!sameRequest(existing, request)) {
      return { ok: false, code: 'reference_conflict', existing };
    }
    return { replay: existing };
  }
  // A module-level entryOf, not a closure: a closure per request was a tenth of a commit.
  const of = { accountId, request, at };
  switch (request.kind) {
    case 'grant': {
      const room = Number.MAX_SAFE_INTEGER - balance.total;
      if (request.amount > room) return { ok: false, code: 'balance_limit', limit: room };
      return {
        write: {
          entry: entryOf(of, request.amount, request.amount, null),
          balance: {
            ...balance,
            available: balance.available + request.amount,
            total: balance.total + request.amount,
          },
          reservation: undefined,
        },
      };
    }
    case 'reserve':
      if (request.amount > balance.available) {
        return {
          ok: false,
          code: 'insufficient_credits',
          needed: request.amount,
          available: balance.available,
        };
      }
      return {
        write: {
          entry: entryOf(of, request.amount, -request.amount, request.ref),
          balance: {
            ...balance,
            available: balance.available - request.amount,
            reserved: balance.reserved + request.amount,
          },
          reservation: {
            ref: request.ref,
            held: request.amount,
            charged: 0,
            expiresAt: request.expiresAt ?? at + HOLD_TTL_MS,
          },
        },
      };
    default:
      return planAgainstReservation(request, snapshot, of);
  }
}

interface EntryOrigin {
  readonly accountId: string;
  readonly request: LedgerRequest;
  readonly at: number;
}

function entryOf(
  { accountId, request, at }: EntryOrigin,
  amount: number,
  delta: number,
  reservation: string | null,
): Omit<LedgerEntry, 'seq'> {
  return {
    accountId,
    ref: request.ref,
    kind: request.kind,
    amount,
    delta,
    reservation,
    note: request.note ?? null,
    createdAt: at,
  };
}

function planAgainstReservation(
  request: Extract<LedgerRequest, { reservation: string }>,
  { balance, reservation }: LedgerSnapshot,
  of: EntryOrigin,
): { write: LedgerWrite } | LedgerRefusal {
  if (reservation === undefined || reservation.ref !== request.reservation) {
    return { ok: false, code: 'unknown_reservation', reservation: request.reservation };
  }
  const { held, charged } = reservation;
  const limit = request.kind === 'refund' ? held + charged : held;
  const amount = request.amount ?? limit;
  // Nothing left to give back is a refusal too: an entry of 0 credits would say nothing.
  if (amount > limit || amount === 0) return { ok: false, code: 'exceeds_reservation', limit };

  if (request.kind === 'settle') {
    return {
      write: {
        entry: entryOf(of, amount, 0, reservation.ref),
        balance: { ...balance, reserved: balance.reserved - amount, used: balance.used + amount },
        reservation: { ...reservation, held: held - amount, charged: charged + amount },
      },
    };
  }
  // release gives back only the hold; refund takes the hold first, then the charge.
  const fromHeld = Math.min(amount, held);
  const fromCharged = amount - fromHeld;
  return {
    write: {
      entry: entryOf(of, amount, amount, reservation.ref),
      balance: {
        available: balance.available + amount,
        reserved: balance.reserved - fromHeld,
        used: balance.used - fromCharged,
        total: balance.total,
      },
      reservation: { ...reservation, held: held - fromHeld, charged: charged - fromCharged },
    },
  };
}

/** A retry is the same request when kind, reservation and (where given) amount agree. */
function sameRequest(existing: LedgerEntry, request: LedgerRequest): boolean {
  if (existing.kind !== request.kind) return false;
  if ('reservation' in request && existing.reservation !== request.reservation) return false;
  return request.amount === undefined || request.amount === existing.amount;
}

function commitProblem(commit: LedgerCommit): string | undefined {
  if (typeof commit !== 'object' || commit === null || !Array.isArray(commit.requests)) {
    return 'the ledger commit must be an object with a list of requests';
  }
  const { requests } = commit;
  for (let i = 0; i < requests.length; i++) {
    const request = requests[i] as LedgerRequest;
    const problem = ledgerRequestProblem(request);
    if (problem !== undefined) return problem;
    // Commits hold a request or two: comparing pairs beats building a Set.
    for (let j = 0; j < i; j++) {
      if ((requests[j] as LedgerRequest).ref === request.ref) {
        return `ref ${request.ref} appears twice in one commit`;
      }
    }
  }
  return undefined;
}

/** What is wrong with a request's shape, naming the field, or undefined when it is sound. */
export function ledgerRequestProblem(request: LedgerRequest): string | undefined {
  if (typeof request !== 'object' || request === null)
    return 'the ledger request must be an object';
  if (!LEDGER_KINDS.includes(request.kind)) {
    return 'kind must be one of grant, reserve, settle, release, refund';
  }
  if (!isReference(request.ref)) return `ref must be a string of 1 to ${MAX_REF_LENGTH} characters`;
  const againstReservation = request.kind !== 'grant' && request.kind !== 'reserve';
  if (againstReservation && !isReference((request as { reservation?: unknown }).reservation)) {
    return 'reservation must be the reference of a reserve entry';
  }
  const amount = (request as { amount?: unknown }).amount;
  const optionalAmount = request.kind === 'release' || request.kind === 'refund';
  if (!(optionalAmount && amount === undefined) && !isAmount(amount)) {
    return `amount must be a whole number of credits from 1 to ${MAX_LEDGER_AMOUNT}`;
  }
  const expiresAt = (request as { expiresAt?: unknown }).expiresAt;
  if (expiresAt !== undefined && (request.kind !== 'reserve' || !Number.isSafeInteger(expiresAt))) {
    return 'expiresAt must be epoch milliseconds, on a reserve only';
  }
  if (
    request.note !== undefined &&
    (typeof request.note !== 'string' || request.note.length > 500)
  ) {
    return 'note must be a string of at most 500 characters';
  }
  return undefined;
}

const LEDGER_KINDS: readonly string[] = ['grant', 'reserve', 'settle', 'release', 'refund'];

function isReference(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_REF_LENGTH;
}

function isAmount(value: unknown): value is number {
  return (
    Number.isSafeInteger(value) && (value as number) >= 1 && (value as number) <= MAX_LEDGER_AMOUNT
  );
}
