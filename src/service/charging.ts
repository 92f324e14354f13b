import type { MethodName } from '../engine/methods.js';
import { METHOD_NAMES } from '../engine/methods.js';
import { FILTER_VERDICTS, fixedVerdict } from '../engine/fixed-verdict.js';
import { testAddressVerdict } from '../engine/test-addresses.js';
import { UNKNOWN_REASONS, type Verdict } from '../engine/verdict.js';
import { optional } from '../optional.js';
import type { CreditBalance, LedgerEntry, LedgerOutcome, LedgerRequest } from '../ports/store.js';
import type { AccountRef } from './auth.js';
import type { ServiceContext } from './context.js';
import type { Filters } from './filters.js';
import { invalidRequest, ServiceError } from './service-error.js';
import { answering, requireText } from './validate.js';

export interface ServiceVerifyOptions {
  readonly method?: MethodName;
  readonly signal?: AbortSignal;
  /**
   * Makes a retry safe: the same id reserves and settles under the same ledger references,
   * so a request retried after a lost answer is verified again but charged once.
   */
  readonly requestId?: string | undefined;
}

export interface ServiceVerifyResult {
  readonly verdict: Verdict;
  /** Credits this verification cost: 0 for test addresses, filter matches and refunds. */
  readonly charged: number;
}

export interface LedgerReceipt {
  readonly entry: LedgerEntry;
  readonly balance: CreditBalance;
  readonly replayed: boolean;
}

/** Single verify with its charge (DESIGN 5.3). */
export interface Charging {
  /** Reserves the method's cost, verifies, settles (or refunds a result we could not get). */
  verify(
    caller: AccountRef,
    email: unknown,
    options?: ServiceVerifyOptions,
  ): Promise<ServiceVerifyResult>;
}

/** Files one ledger request, its refusals as ServiceErrors. */
export async function fileLedger(
  ctx: ServiceContext,
  accountId: string,
  request: LedgerRequest,
): Promise<LedgerReceipt> {
  return receiptOf(await ctx.store.applyLedger(accountId, request, ctx.clock.now()));
}

export function createCharging(ctx: ServiceContext, filters: Pick<Filters, 'match'>): Charging {
  const { engine, store, clock } = ctx;
  return {
    verify: (caller, email, verifyOptions = {}) =>
      answering(async () => {
        if (typeof email !== 'string') throw invalidRequest('email', 'email must be a string');
        const method = verifyOptions.method ?? 'standard';
        if (!METHOD_NAMES.includes(method)) {
          throw invalidRequest('method', `method must be one of ${METHOD_NAMES.join(', ')}`);
        }
        const { signal } = verifyOptions;
        const parsed = engine.parse(email);
        if (parsed.ok) {
          const fixed = testAddressVerdict(parsed);
          if (fixed !== undefined) {
            // The engine's own answer for a test address, without parsing it a second time.
            if (signal?.aborted) throw signal.reason;
            return {
              verdict: fixedVerdict(email, parsed, method, fixed, 'test_address'),
              charged: 0,
            };
          }
          const action = await filters.match(caller.accountId, parsed, signal);
          if (action !== undefined) {
            return {
              verdict: fixedVerdict(email, parsed, method, FILTER_VERDICTS[action], 'filter'),
              charged: 0,
            };
          }
        }
        const requestId =
          verifyOptions.requestId === undefined
            ? ctx.newId('req')
            : requireText(verifyOptions.requestId, 'request_id', 100);
        const reservation = `verify:${requestId}`;
        const cost = engine.cost(method);
        const reserved = await fileLedger(ctx, caller.accountId, {
          kind: 'reserve',
          ref: reservation,
          amount: cost,
        });
        let verdict: Verdict;
        try {
          verdict = await engine.verify(email, { method, ...optional('signal', signal) });
        } catch (error) {
          // Aborted or failed: nothing was learned, nothing is charged.
          await close({ kind: 'release', ref: `${reservation}:release`, reservation });
          throw error;
        }
        if (reserved.replayed) {
          // A retry: the first attempt's charge or refund stands; a hold it left behind (a
          // crash between reserve and settle) goes back to the account.
          await close({ kind: 'release', ref: `${reservation}:release`, reservation });
          return { verdict, charged: 0 };
        }
        if (UNKNOWN_REASONS.has(verdict.reason)) {
          await close({
            kind: 'refund',
            ref: `${reservation}:refund`,
            reservation,
            note: verdict.reason,
          });
          return { verdict, charged: 0 };
        }
        await close({ kind: 'settle', ref: `${reservation}:settle`, reservation, amount: cost });
        return { verdict, charged: cost };

        /** Files the closing entry; a reservation with nothing left to close is fine. */
        async function close(request: LedgerRequest): Promise<void> {
          const outcome = await store.applyLedger(caller.accountId, request, clock.now());
          if (!outcome.ok && outcome.code === 'exceeds_reservation') return;
          receiptOf(outcome);
        }
      }),
  };
}

/** A ledger outcome as a receipt, or its refusal as the ServiceError a caller is answered. */
export function receiptOf(outcome: LedgerOutcome): LedgerReceipt {
  if (outcome.ok) {
    return { entry: outcome.entry, balance: outcome.balance, replayed: outcome.replayed };
  }
  switch (outcome.code) {
    case 'insufficient_credits':
      throw new ServiceError(
        'insufficient_credits',
        `Not enough credits: ${outcome.needed} needed, ${outcome.available} available.`,
        { needed: outcome.needed, available: outcome.available },
      );
    case 'unknown_reservation':
      throw new ServiceError('not_found', `No reservation ${outcome.reservation}.`, {
        field: 'reservation',
      });
    case 'exceeds_reservation':
      throw invalidRequest(
        'amount',
        `amount exceeds what the reservation holds (${outcome.limit})`,
      );
    case 'reference_conflict':
      throw new ServiceError(
        'conflict',
        `Reference ${outcome.existing.ref} was used for a different request.`,
        { ref: outcome.existing.ref },
      );
  }
}
