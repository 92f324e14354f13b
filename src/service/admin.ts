import { optional } from '../optional.js';
import type { LedgerEntry, LedgerRequest } from '../ports/store.js';
import type { AccountAdmin } from './account.js';
import type { KeyAdmin } from './auth.js';
import { fileLedger, type LedgerReceipt } from './charging.js';
import { accountOf, type ServiceContext } from './context.js';
import { answering, requireInteger, requireText } from './validate.js';

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
}

/** Administration without HTTP: accounts, keys, credits and plans (DESIGN 5.1-5.3). */
export interface ServiceAdmin extends AccountAdmin, KeyAdmin, CreditAdmin {}

/** The admin API: account and key administration from their capabilities, plus credits. */
export function createAdmin(
  ctx: ServiceContext,
  accounts: AccountAdmin,
  keys: KeyAdmin,
): ServiceAdmin {
  const credits: CreditAdmin = {
    grantCredits: (accountId, amount, grant = {}) =>
      answering(async () => {
        requireText(accountId, 'account_id');
        return fileLedger(ctx, accountId, {
          kind: 'grant',
          ref: grant.ref ?? ctx.newId('grant'),
          amount: requireInteger(amount, 'amount', 1, 1_000_000_000_000),
          ...optional('note', grant.note),
        });
      }),
    refund: (accountId, input) =>
      answering(async () => {
        requireText(accountId, 'account_id');
        return fileLedger(ctx, accountId, {
          kind: 'refund',
          ref: input.ref ?? ctx.newId('refund'),
          reservation: requireText(input.reservation, 'reservation'),
          ...optional('amount', input.amount),
          ...optional('note', input.note),
        });
      }),
    applyLedger: (accountId, request) =>
      answering(async () => {
        requireText(accountId, 'account_id');
        return fileLedger(ctx, accountId, request);
      }),
    ledger: (accountId, page) =>
      answering(async () => {
        await accountOf(ctx, accountId);
        return ctx.store.ledgerEntries(accountId, page);
      }),
  };
  return { ...accounts, ...keys, ...credits };
}
