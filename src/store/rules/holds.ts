import type { LedgerRequest } from '../../ports/store.js';
import type { LedgerBook } from './ledger.js';

// What every store does with a batch job's hold: renew it while the job runs, release what it
// still holds when the job ends. Each store calls these inside its own atomic write.

/** Moves a live hold's expiry later; false when the reservation holds nothing. */
export function renewIn(book: LedgerBook, reservation: string, expiresAt: number): boolean {
  const state = book.reservation(reservation);
  if (state === undefined || state.held === 0) return false;
  if (expiresAt > state.expiresAt) book.putReservation({ ...state, expiresAt });
  return true;
}

/** The release that ends a job: whatever its reservation still holds, if anything. */
export function finalRelease(book: LedgerBook, reservation: string | null): LedgerRequest[] {
  if (reservation === null) return [];
  const state = book.reservation(reservation);
  if (state === undefined || state.held === 0) return [];
  return [
    {
      kind: 'release',
      ref: `${reservation}:release`,
      reservation,
      note: 'batch finished',
    },
  ];
}
