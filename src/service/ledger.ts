import type {
  CreditBalance,
  LedgerEntry,
  LedgerOutcome,
  LedgerRefusal,
  LedgerRequest,
  ReservationState,
} from '../ports/store.js';
import { StoreError } from '../store/store-error.js';

// The request and outcome types live with the Store port, which files them.
export type { LedgerOutcome, LedgerRefusal, LedgerRequest } from '../ports/store.js';

/**
 * One account's side of a store, read and written inside the store's transaction: what
 * `applyLedgerRequest` needs to decide a request and file it.
 */
export interface LedgerBook {
  /** The account's balance, or undefined when there is no such account. */
  balance(): CreditBalance | undefined;
  /** The entry filed under `ref`, if any. */
  entry(ref: string): LedgerEntry | undefined;
  reservation(ref: string): ReservationState | undefined;
  /** Files the entry, the reservation and the balance together; returns the entry's seq. */
  write(write: LedgerWrite): number;
}

interface LedgerSnapshot {
  readonly balance: CreditBalance;
  readonly existing: LedgerEntry | undefined;
  readonly reservation: ReservationState | undefined;
}

/** What a store writes, in the same transaction, when a request applies. */
export interface LedgerWrite {
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

/** Largest single amount: keeps every sum an exact integer in a double and in SQLite. */
export const MAX_LEDGER_AMOUNT = 1_000_000_000_000;

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
  const problem = ledgerRequestProblem(request);
  if (problem !== undefined) throw new StoreError('invalid', problem);
  const balance = book.balance();
  if (balance === undefined) throw new StoreError('not_found', `No account ${accountId}.`);
  const reservation = 'reservation' in request ? book.reservation(request.reservation) : undefined;
  const plan = planLedger(
    accountId,
    request,
    { balance, existing: book.entry(request.ref), reservation },
    at,
  );
  if ('replay' in plan) return { ok: true, entry: plan.replay, balance, replayed: true };
  if (!('write' in plan)) return plan;
  const seq = book.write(plan.write);
  return {
    ok: true,
    entry: { ...plan.write.entry, seq },
    balance: plan.write.balance,
    replayed: false,
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
    return sameRequest(existing, request)
      ? { replay: existing }
      : { ok: false, code: 'reference_conflict', existing };
  }
  const note = request.note ?? null;
  const entryOf = (amount: number, delta: number, reservation: string | null) => ({
    accountId,
    ref: request.ref,
    kind: request.kind,
    amount,
    delta,
    reservation,
    note,
    createdAt: at,
  });

  switch (request.kind) {
    case 'grant':
      return {
        write: {
          entry: entryOf(request.amount, request.amount, null),
          balance: {
            ...balance,
            available: balance.available + request.amount,
            total: balance.total + request.amount,
          },
          reservation: undefined,
        },
      };
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
          entry: entryOf(request.amount, -request.amount, request.ref),
          balance: {
            ...balance,
            available: balance.available - request.amount,
            reserved: balance.reserved + request.amount,
          },
          reservation: { ref: request.ref, held: request.amount, charged: 0 },
        },
      };
    default:
      return planAgainstReservation(request, snapshot, entryOf);
  }
}

function planAgainstReservation(
  request: Extract<LedgerRequest, { reservation: string }>,
  { balance, reservation }: LedgerSnapshot,
  entryOf: (amount: number, delta: number, reservation: string | null) => LedgerWrite['entry'],
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
        entry: entryOf(amount, 0, reservation.ref),
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
      entry: entryOf(amount, amount, reservation.ref),
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

/** What is wrong with a request's shape, naming the field, or undefined when it is sound. */
function ledgerRequestProblem(request: LedgerRequest): string | undefined {
  if (typeof request !== 'object' || request === null)
    return 'the ledger request must be an object';
  if (!['grant', 'reserve', 'settle', 'release', 'refund'].includes(request.kind)) {
    return 'kind must be one of grant, reserve, settle, release, refund';
  }
  if (!isReference(request.ref)) return 'ref must be a string of 1 to 200 characters';
  const againstReservation = request.kind !== 'grant' && request.kind !== 'reserve';
  if (againstReservation && !isReference((request as { reservation?: unknown }).reservation)) {
    return 'reservation must be the reference of a reserve entry';
  }
  const amount = (request as { amount?: unknown }).amount;
  const optionalAmount = request.kind === 'release' || request.kind === 'refund';
  if (!(optionalAmount && amount === undefined) && !isAmount(amount)) {
    return `amount must be a whole number of credits from 1 to ${MAX_LEDGER_AMOUNT}`;
  }
  if (
    request.note !== undefined &&
    (typeof request.note !== 'string' || request.note.length > 500)
  ) {
    return 'note must be a string of at most 500 characters';
  }
  return undefined;
}

function isReference(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= 200;
}

function isAmount(value: unknown): value is number {
  return (
    Number.isSafeInteger(value) && (value as number) >= 1 && (value as number) <= MAX_LEDGER_AMOUNT
  );
}
