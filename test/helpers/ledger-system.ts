import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { createEngine } from '../../src/compose/engine.js';
import type { CreditBalance, LedgerEntry, Store } from '../../src/ports/store.js';
import type { LedgerRequest } from '../../src/store/rules/ledger.js';
import type { PlanName } from '../../src/service/plans.js';
import { createService } from '../../src/compose/service.js';
import { type Service } from '../../src/service/service.js';
import { ServiceError } from '../../src/service/service-error.js';

/** The account every model run uses, created with an `initial_grant` of these credits. */
export const MODEL_ACCOUNT_EMAIL = 'model@example.org';
export const MODEL_START_CREDITS = 60;

/** What a model step asks of the system under test, in plain JSON in and out. */
export interface LedgerSystem {
  setup(): Promise<string>;
  ledger(accountId: string, request: LedgerRequest): Promise<Outcome>;
  /** `requestId` null: no idempotency key. */
  verify(
    accountId: string,
    email: string,
    method: 'quick' | 'standard',
    requestId: string | null,
  ): Promise<Outcome>;
  /** `copies` of one verify at once. */
  verifyConcurrently(
    accountId: string,
    email: string,
    method: 'quick' | 'standard',
    requestId: string | null,
    copies: number,
  ): Promise<Outcome[]>;
  /** Moves the service clock on by `ms`, then sweeps expired holds. */
  advanceAndSweep(ms: number): Promise<Outcome>;
  /** An idempotency key's state: null when free. */
  idempotency(accountId: string, key: string): Promise<{ charged: number | null } | null>;
  holds(accountId: string): Promise<{ ref: string; held: number; expiresAt: number }[]>;
  now(): Promise<number>;
  changePlan(accountId: string, plan: PlanName): Promise<Outcome>;
  state(
    accountId: string,
  ): Promise<{ balance: CreditBalance; entries: LedgerEntry[]; plan: string }>;
}

export type Outcome = { ok: true; charged?: number } | { ok: false; code: string };

export function ledgerSystem(service: Service, clock: ShiftingClock): LedgerSystem {
  const outcome = async (work: () => Promise<{ charged?: number } | unknown>): Promise<Outcome> => {
    try {
      const result = (await work()) as { charged?: number };
      return result?.charged === undefined ? { ok: true } : { ok: true, charged: result.charged };
    } catch (error) {
      if (error instanceof ServiceError) return { ok: false, code: error.code };
      throw error;
    }
  };
  return {
    async setup() {
      return (
        await service.admin.createAccount({
          email: MODEL_ACCOUNT_EMAIL,
          credits: MODEL_START_CREDITS,
        })
      ).id;
    },
    ledger: (accountId, request) => outcome(() => service.admin.applyLedger(accountId, request)),
    verify: (accountId, email, method, requestId) =>
      outcome(() =>
        service.verify({ accountId }, email, {
          method,
          ...(requestId === null ? {} : { requestId }),
        }),
      ),
    verifyConcurrently: (accountId, email, method, requestId, copies) =>
      Promise.all(
        Array.from({ length: copies }, () =>
          outcome(() =>
            service.verify({ accountId }, email, {
              method,
              ...(requestId === null ? {} : { requestId }),
            }),
          ),
        ),
      ),
    advanceAndSweep: (ms) =>
      outcome(async () => {
        clock.advance(ms);
        return service.admin.sweepHolds();
      }),
    async idempotency(accountId, key) {
      const record = await service.store.idempotencyRecord(accountId, key, clock.now());
      if (record === undefined) return null;
      return {
        charged:
          record.answer === null
            ? null
            : (JSON.parse(record.answer) as { charged: number }).charged,
      };
    },
    async holds(accountId) {
      return (await service.admin.holds(accountId)).map(({ ref, held, expiresAt }) => ({
        ref,
        held,
        expiresAt,
      }));
    },
    now: async () => clock.now(),
    changePlan: (accountId, plan) => outcome(() => service.admin.changePlan(accountId, plan)),
    async state(accountId) {
      const account = await service.admin.getAccount(accountId);
      return {
        balance: account.credits,
        entries: [...(await service.admin.ledger(accountId))],
        plan: account.plan,
      };
    },
  };
}

/** A clock the model moves on, so that holds and leases expire without waiting. */
export interface ShiftingClock {
  now(): number;
  advance(ms: number): void;
}

export function shiftingClock(offset = 0): ShiftingClock {
  return { now: () => Date.now() + offset, advance: (ms) => (offset += ms) };
}

/**
 * The service the model drives: example.org answers, slow-dns.org times out (a refund).
 * Offline, every verify is synchronous (reserve and settle in one commit) and nothing times
 * out: slow-dns.org is charged like any other.
 */
export function modelService(store: Store, clock: ShiftingClock, offline = false): Service {
  const dns = createMemoryDns({
    'example.org': ['mx.example.org'],
    'slow-dns.org': { kind: 'failure', code: 'timeout' },
  });
  const engine = offline ? createEngine({ offline: true }) : createEngine({ dns });
  return createService({ engine, store, clock });
}
