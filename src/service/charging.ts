import { createHash } from 'node:crypto';
import { firstAnswer } from './idempotency.js';
import { freeVerdict } from '../engine/free-verdict.js';
import type { MethodName } from '../engine/methods.js';
import { UNKNOWN_REASONS, type Verdict } from '../engine/verdict.js';
import type {
  CreditBalance,
  IdempotencyChange,
  LedgerCommit,
  LedgerCommitOutcome,
  LedgerEntry,
  LedgerOutcome,
  LedgerRefusal,
  LedgerRequest,
} from '../ports/store.js';
import { randomBase62 } from './api-keys.js';
import type { AccountRef, Caller } from './auth.js';
import { accountOf, type ServiceContext } from './context.js';
import { emailKey } from './filter-values.js';
import type { Filters } from './filters.js';
import { methodOf, requestIdOf } from './request-fields.js';
import { invalidRequest, ServiceError } from './service-error.js';
import {
  answering,
  assertEmailInput,
  optionalObject,
  optionalSignal,
  requireAccountRef,
  requireText,
  requireUsableMethod,
} from './validate.js';

export interface ServiceVerifyOptions {
  readonly method?: MethodName;
  readonly signal?: AbortSignal;
  /**
   * An idempotency key (the `Idempotency-Key` header), as Stripe has them: scoped to the
   * account and bound to the request (method and normalized address). Within 24 hours the
   * same key with the same request answers the first answer again, charging nothing more;
   * with another request it is refused with 409 `idempotency_conflict`, and while the first
   * is still running with 409 `request_in_progress`.
   */
  readonly requestId?: string | undefined;
  /**
   * What else the answer depends on, for a host that shapes the verdict (the HTTP layer's
   * `detailed`, `fields`, form B and `site_source`): bound into the idempotency fingerprint
   * with the method and address, so that a key reused with another shape is a
   * 409 `idempotency_conflict` rather than the first verdict in a shape nobody asked for.
   */
  readonly shape?: string | undefined;
}

export interface ServiceVerifyResult {
  readonly verdict: Verdict;
  /**
   * Credits this verification cost, exactly what the ledger recorded: 0 for test addresses,
   * filter matches and refunds.
   */
  readonly charged: number;
}

export interface LedgerReceipt {
  readonly entry: LedgerEntry;
  readonly balance: CreditBalance;
  readonly replayed: boolean;
}

/** Single verify with its charge (docs/architecture.md, "Credits and holds"). */
export interface Charging {
  /** Reserves the method's cost, verifies, settles (or refunds a result we could not get). */
  verify(
    caller: AccountRef,
    email: unknown,
    options?: ServiceVerifyOptions,
  ): Promise<ServiceVerifyResult>;
}

/**
 * How long a verification may run before the service aborts it. Quick and standard wait on
 * DNS only; smtp on up to three MX hosts, each with its connect, banner and command timeouts.
 */
export const VERIFY_DEADLINE_MS: Readonly<Record<MethodName, number>> = {
  quick: 30_000,
  standard: 30_000,
  smtp: 180_000,
};
/** A verify's hold outlives its deadline by this much, so it never lapses under a live verify. */
export const HOLD_MARGIN_MS = 30_000;

/** Files one ledger request, its refusals as ServiceErrors. */
export async function fileLedger(
  ctx: ServiceContext,
  accountId: string,
  request: LedgerRequest,
): Promise<LedgerReceipt> {
  return receiptOf(await ctx.store.applyLedger(accountId, request, ctx.clock.now()));
}

/** An idempotency key in use by this attempt. */
interface Idempotency {
  readonly key: string;
  readonly fingerprint: string;
  readonly attempt: string;
}

export function createCharging(ctx: ServiceContext, filters: Pick<Filters, 'match'>): Charging {
  const { engine, store, clock } = ctx;

  /** The claim that binds the key to this attempt, with its answer once there is one. */
  const claim = (
    idem: Idempotency | undefined,
    answer: ServiceVerifyResult | null,
    leaseUntil: number,
  ): { idempotency?: IdempotencyChange } =>
    idem === undefined
      ? {}
      : {
          idempotency: {
            op: 'claim',
            record: {
              ...idem,
              answer: answer === null ? null : JSON.stringify(answer),
              leaseUntil,
            },
          },
        };

  async function commit(
    accountId: string,
    request: LedgerCommit,
    idem: Idempotency | undefined,
  ): Promise<ServiceVerifyResult | undefined> {
    const outcome = await store.commitLedger(accountId, request, clock.now());
    if (outcome.ok) return undefined;
    if (outcome.code === 'idempotency_taken') {
      return firstAnswer<ServiceVerifyResult>(outcome.record, (idem as Idempotency).fingerprint);
    }
    throw refusalError(outcome);
  }

  /**
   * The verdict settles in the same commit as its reserve when the engine answers without
   * I/O: one transaction per verify, and a verdict that could not be paid for is never shown.
   */
  async function chargeSync(
    accountId: string,
    email: string,
    method: MethodName,
    idem: Idempotency | undefined,
  ): Promise<ServiceVerifyResult> {
    const verdict = engine.verifySync(email, { method });
    const cost = engine.cost(method);
    const now = clock.now();
    const reservation = ctx.serviceRef('verify');
    const result = { verdict, charged: UNKNOWN_REASONS.has(verdict.reason) ? 0 : cost };
    const requests: LedgerRequest[] = [
      { kind: 'reserve', ref: reservation, amount: cost, expiresAt: now + holdMs(method) },
      closing(reservation, verdict, cost),
    ];
    return (await commit(accountId, { requests, ...claim(idem, result, now) }, idem)) ?? result;
  }

  /** Reserve, verify, then settle or refund: the hold (and key) lapse if we die between. */
  async function chargeAsync(
    accountId: string,
    email: string,
    method: MethodName,
    signal: AbortSignal | undefined,
    idem: Idempotency | undefined,
  ): Promise<ServiceVerifyResult> {
    const cost = engine.cost(method);
    const now = clock.now();
    const expiresAt = now + holdMs(method);
    const reservation = ctx.serviceRef('verify');
    const reserve: LedgerRequest = { kind: 'reserve', ref: reservation, amount: cost, expiresAt };
    const first = await commit(
      accountId,
      { requests: [reserve], ...claim(idem, null, expiresAt) },
      idem,
    );
    if (first !== undefined) return first;

    const deadline = AbortSignal.timeout(VERIFY_DEADLINE_MS[method]);
    let verdict: Verdict;
    try {
      verdict = await engine.verify(email, {
        method,
        signal: signal === undefined ? deadline : eitherSignal(signal, deadline),
      });
    } catch (error) {
      // Aborted or failed: nothing was learned, nothing is charged, the key is free again.
      const release: LedgerRequest = {
        kind: 'release',
        ref: `${reservation}:release`,
        reservation,
      };
      const outcome = await store.commitLedger(
        accountId,
        {
          requests: [release],
          ...(idem === undefined
            ? {}
            : { idempotency: { op: 'drop', key: idem.key, attempt: idem.attempt } }),
        },
        clock.now(),
      );
      // A hold the sweeper released already has nothing left to give back: that is fine.
      if (!outcome.ok && outcome.code !== 'exceeds_reservation') throw refusalError(outcome);
      if (deadline.aborted && signal?.aborted !== true) {
        // Our deadline, not the caller's signal: a typed answer rather than a raw abort.
        throw new ServiceError(
          'internal_error',
          `The verification did not finish within ${VERIFY_DEADLINE_MS[method] / 1000} s; nothing was charged.`,
          {},
          { cause: error },
        );
      }
      throw error;
    }
    const result = { verdict, charged: UNKNOWN_REASONS.has(verdict.reason) ? 0 : cost };
    const settled = await store.commitLedger(
      accountId,
      { requests: [closing(reservation, verdict, cost)], ...claim(idem, result, expiresAt) },
      clock.now(),
    );
    if (!settled.ok) {
      // The hold lapsed under a verify that overran its deadline, or another attempt took the
      // key: the charge is not what we would answer, so we answer nothing rather than lie.
      throw new ServiceError(
        'internal_error',
        'The verification outlived its credit hold and was not charged; retry it.',
        {},
        { cause: settled },
      );
    }
    return result;
  }

  return {
    verify: (caller, email, verifyOptions = {}) =>
      answering(async () => {
        // Every argument checked before any is used (issue 11, defect 9: hostile arguments).
        const accountId = requireAccountRef(caller);
        assertEmailInput(email);
        const options = optionalObject(verifyOptions, 'options') as ServiceVerifyOptions;
        const method = methodOf(options.method);
        const signal = optionalSignal(options.signal);
        const parsed = engine.parse(email);
        let idem: Idempotency | undefined;
        if (options.requestId !== undefined) {
          const key = requestIdOf(options.requestId);
          const shape =
            options.shape === undefined ? undefined : requireText(options.shape, 'shape', 1024);
          const fingerprint = fingerprintOf(method, parsed.ok ? emailKey(parsed) : email, shape);
          const held = await store.idempotencyRecord(accountId, key, clock.now());
          if (held !== undefined && !(held.answer === null && held.leaseUntil <= clock.now())) {
            return firstAnswer<ServiceVerifyResult>(held, fingerprint);
          }
          idem = { key, fingerprint, attempt: randomBase62(16, ctx.random) };
        }

        // Matched before anything is reserved, so that a match is free even for an account
        // without the credits the method costs; an IP match asks the engine's Dns (and cache)
        // for the MX hosts the verification then finds there.
        const free = await freeVerdict(email, parsed, method, (valid) =>
          filters.match(accountId, valid, signal),
        );
        if (free !== undefined) {
          // A test address is the engine's answer, and an aborted engine.verify rejects.
          if (free.testAddress && signal?.aborted) throw signal.reason;
          const result = { verdict: free, charged: 0 };
          if (idem === undefined) {
            // Nothing is filed, so no store says whether the account exists: a Caller from
            // authenticate carries it; a bare `{ accountId }` is looked up, as a charge would.
            if (!carriesAccount(caller, accountId)) await accountOf(ctx, accountId);
            return result;
          }
          return (
            (await commit(accountId, { requests: [], ...claim(idem, result, 0) }, idem)) ?? result
          );
        }
        if (signal?.aborted) throw signal.reason;
        // Test addresses and filter matches were answered above; a verification needs an
        // engine that can do what the method says, checked before anything is reserved.
        requireUsableMethod(method, engine.canProbe);
        return engine.dns.offline === true && method !== 'smtp'
          ? chargeSync(accountId, email, method, idem)
          : chargeAsync(accountId, email, method, signal, idem);
      }),
  };
}

/** Whether `caller` is a Caller of `accountId` from authenticate, which found its account. */
function carriesAccount(caller: AccountRef, accountId: string): boolean {
  try {
    const account = (caller as Partial<Pick<Caller, 'account'>>).account;
    return typeof account === 'object' && account !== null && account.id === accountId;
  } catch {
    return false; // a getter that throws: look the account up instead
  }
}

/** Aborts when either does (AbortSignal.any arrived in Node 20.3; engines allow 20.0). */
function eitherSignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  if (typeof AbortSignal.any === 'function') return AbortSignal.any([a, b]);
  const controller = new AbortController();
  for (const signal of [a, b]) {
    if (signal.aborted) controller.abort(signal.reason);
    else signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
  }
  return controller.signal;
}

function holdMs(method: MethodName): number {
  return VERIFY_DEADLINE_MS[method] + HOLD_MARGIN_MS;
}

/** Settles the cost, or refunds it when the result could not be verified (UNKNOWN_REASONS). */
function closing(reservation: string, verdict: Verdict, cost: number): LedgerRequest {
  return UNKNOWN_REASONS.has(verdict.reason)
    ? { kind: 'refund', ref: `${reservation}:refund`, reservation, note: verdict.reason }
    : { kind: 'settle', ref: `${reservation}:settle`, reservation, amount: cost };
}

/**
 * Digest of what makes two requests the same request: method, normalized address and, when
 * the host gives one, the shape of the answer (without one, the digest is what it always was,
 * so keys stored before shapes counted still match).
 */
function fingerprintOf(method: MethodName, address: string, shape: string | undefined): string {
  // NUL joins the parts, and neither a method nor a shape holds one. An address may (it is
  // judged invalid_email, as any string is): it goes quoted, after an empty part no NUL-free
  // address leaves, so that no two requests share a digest and those stored before keep theirs.
  const spelled = address.includes('\u0000') ? `\u0000${JSON.stringify(address)}` : address;
  const request = `verify\u0000${method}\u0000${spelled}`;
  return createHash('sha256')
    .update(shape === undefined ? request : `${request}\u0000${shape}`)
    .digest('base64url');
}

/** A ledger outcome as a receipt, or its refusal as the ServiceError a caller is answered. */
export function receiptOf(outcome: LedgerOutcome): LedgerReceipt {
  if (outcome.ok) {
    return { entry: outcome.entry, balance: outcome.balance, replayed: outcome.replayed };
  }
  throw refusalError(outcome);
}

function refusalError(
  outcome: LedgerRefusal | Exclude<LedgerCommitOutcome, { ok: true }>,
): ServiceError {
  switch (outcome.code) {
    case 'insufficient_credits':
      return new ServiceError(
        'insufficient_credits',
        `Not enough credits: ${outcome.needed} needed, ${outcome.available} available.`,
        { needed: outcome.needed, available: outcome.available },
      );
    case 'unknown_reservation':
      return new ServiceError('not_found', `No reservation ${outcome.reservation}.`, {
        field: 'reservation',
      });
    case 'exceeds_reservation':
      return invalidRequest(
        'amount',
        `amount exceeds what the reservation holds (${outcome.limit})`,
      );
    case 'reference_conflict':
      return new ServiceError(
        'conflict',
        `Reference ${outcome.existing.ref} was used for a different request.`,
        { ref: outcome.existing.ref },
      );
    case 'balance_limit':
      return invalidRequest(
        'amount',
        `amount would take the balance past ${Number.MAX_SAFE_INTEGER}; at most ${outcome.limit} fits`,
      );
    case 'idempotency_taken':
      return new ServiceError('request_in_progress', 'The idempotency key is in use.', {
        field: 'request_id',
      });
  }
}
