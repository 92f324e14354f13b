import { optional } from '../optional.js';
import type { LedgerEntry, LedgerRequest, ReservationState } from '../ports/store.js';
import type { AccountAdmin } from './account.js';
import type { KeyAdmin } from './auth.js';
import { fileLedger, type LedgerReceipt } from './charging.js';
import { accountOf, type ServiceContext } from './context.js';
import { MAX_LEDGER_AMOUNT, SERVICE_REF_PREFIX } from '../store/rules/ledger.js';
import { invalidRequest } from './service-error.js';
import {
  answering,
  optionalObject,
  requireInteger,
  requireLedgerPage,
  requireLedgerRequest,
  requireObject,
  requireText,
} from './validate.js';

/** Credits administration: top-ups, refunds, raw ledger requests and the ledger itself. */
export interface CreditAdmin {
  /** A top-up. Pass `ref` to make a retried top-up apply once. */
  grantCredits(
    accountId: string,
    amount: number,
    options?: { ref?: string; note?: string },
  ): Promise<LedgerReceipt>;
  /** Gives back credits of a reservation whose results could not be verified. */
  refund(
    accountId: string,
    input: { reservation: string; amount?: number; ref?: string; note?: string },
  ): Promise<LedgerReceipt>;
  /** Any ledger request (reserve/settle/release for batch work), refusals as ServiceErrors. */
  applyLedger(accountId: string, request: LedgerRequest): Promise<LedgerReceipt>;
  ledger(
    accountId: string,
    page?: { afterSeq?: number; limit?: number },
  ): Promise<readonly LedgerEntry[]>;
  /** Reservations still holding credits, with when each lapses (oldest expiry first). */
  holds(accountId: string): Promise<readonly ReservationState[]>;
  /**
   * Releases every hold past its expiry now, as the stores' sweeper does on its interval;
   * resolves with how many were released.
   */
  sweepHolds(): Promise<number>;
}

/** A caller's reference: never of the service's own namespace (SERVICE_REF_PREFIX). */
export function callerRef(value: unknown, field: string): string {
  const ref = requireText(value, field);
  if (ref.startsWith(SERVICE_REF_PREFIX)) {
    throw invalidRequest(
      field,
      `${field} may not start with ${SERVICE_REF_PREFIX}: the service's own`,
    );
  }
  return ref;
}

/** Administration without HTTP: accounts, keys, credits and plans. */
export interface ServiceAdmin extends AccountAdmin, KeyAdmin, CreditAdmin {}

/** The admin API: account and key administration from their capabilities, plus credits. */
export function createAdmin(
  ctx: ServiceContext,
  accounts: AccountAdmin,
  keys: KeyAdmin,
): ServiceAdmin {
  const credits: CreditAdmin = {
    grantCredits: (accountId, amount, options) =>
      answering(async () => {
        requireText(accountId, 'account_id');
        const grant = optionalObject(options, 'options') as { ref?: string; note?: string };
        if (grant.note !== undefined) requireText(grant.note, 'note', 500);
        return fileLedger(ctx, accountId, {
          kind: 'grant',
          ref: grant.ref === undefined ? ctx.serviceRef('grant') : callerRef(grant.ref, 'ref'),
          amount: requireInteger(amount, 'amount', 1, MAX_LEDGER_AMOUNT),
          ...optional('note', grant.note),
        });
      }),
    refund: (accountId, refund) =>
      answering(async () => {
        requireText(accountId, 'account_id');
        const input = requireObject(refund, 'refund') as Parameters<CreditAdmin['refund']>[1];
        requireText(input.reservation, 'reservation');
        if (input.amount !== undefined) {
          requireInteger(input.amount, 'amount', 1, MAX_LEDGER_AMOUNT);
        }
        if (input.note !== undefined) requireText(input.note, 'note', 500);
        return fileLedger(ctx, accountId, {
          kind: 'refund',
          ref: input.ref === undefined ? ctx.serviceRef('refund') : callerRef(input.ref, 'ref'),
          reservation: requireText(input.reservation, 'reservation'),
          ...optional('amount', input.amount),
          ...optional('note', input.note),
        });
      }),
    applyLedger: (accountId, request) =>
      answering(async () => {
        requireText(accountId, 'account_id');
        const checked = requireLedgerRequest(request);
        callerRef(checked.ref, 'ref');
        return fileLedger(ctx, accountId, checked);
      }),
    ledger: (accountId, page) =>
      answering(async () => {
        await accountOf(ctx, accountId);
        return ctx.store.ledgerEntries(accountId, requireLedgerPage(page));
      }),
    holds: (accountId) =>
      answering(async () => {
        await accountOf(ctx, accountId);
        return ctx.store.listHolds(accountId);
      }),
    sweepHolds: () => answering(() => ctx.store.sweep(ctx.clock.now())),
  };
  return { ...accounts, ...keys, ...credits };
}
