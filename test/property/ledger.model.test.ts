import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../../src/ports/store.js';
import type { LedgerRequest } from '../../src/service/ledger.js';
import type { PlanName } from '../../src/service/plans.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { fcParams } from '../helpers/fast-check.js';
import {
  ledgerSystem,
  MODEL_START_CREDITS,
  modelService,
  type LedgerSystem,
  type Outcome,
} from '../helpers/ledger-system.js';

/**
 * Model-based test of the credits ledger (DESIGN 5.3): random sequences of grants, reserves,
 * settles, releases, refunds, verifies and plan changes run against the service and against a
 * plain model of what each should do. On SQLite the service runs in a child process that is
 * SIGKILLed at random, sometimes with a request in flight, and reopened; the model then takes
 * in whatever the interrupted request wrote. After every step: the balances match the model,
 * the balance is the sum of the entries and never negative, and no reference appears twice.
 */

// ---- the model ----------------------------------------------------------------------------

interface Reservation {
  amount: number;
  held: number;
  charged: number;
}

interface Model {
  available: number;
  reserved: number;
  used: number;
  total: number;
  entries: Map<string, { kind: string; amount: number; reservation: string | null }>;
  reservations: Map<string, Reservation>;
  plan: PlanName;
}

/** The model of a new account: its initial grant and the free plan. */
function newModel(): Model {
  const model: Model = {
    available: 0,
    reserved: 0,
    used: 0,
    total: 0,
    entries: new Map(),
    reservations: new Map(),
    plan: 'free',
  };
  applyEntry(model, {
    ref: 'initial_grant',
    kind: 'grant',
    amount: MODEL_START_CREDITS,
    reservation: null,
  });
  return model;
}

/** What the model expects of a ledger request, applying it when it should apply. */
function modelLedger(model: Model, request: LedgerRequest): Outcome {
  const existing = model.entries.get(request.ref);
  const reservationRef = 'reservation' in request ? request.reservation : null;
  if (existing !== undefined) {
    const same =
      existing.kind === request.kind &&
      (request.kind === 'grant' ||
        request.kind === 'reserve' ||
        existing.reservation === reservationRef) &&
      (request.amount === undefined || request.amount === existing.amount);
    return same ? { ok: true } : { ok: false, code: 'conflict' };
  }
  if (request.kind === 'grant') {
    applyEntry(model, {
      ref: request.ref,
      kind: 'grant',
      amount: request.amount,
      reservation: null,
    });
    return { ok: true };
  }
  if (request.kind === 'reserve') {
    if (request.amount > model.available) return { ok: false, code: 'insufficient_credits' };
    applyEntry(model, {
      ref: request.ref,
      kind: 'reserve',
      amount: request.amount,
      reservation: request.ref,
    });
    return { ok: true };
  }
  const reservation = model.reservations.get(request.reservation);
  if (reservation === undefined) return { ok: false, code: 'not_found' };
  const limit =
    request.kind === 'refund' ? reservation.held + reservation.charged : reservation.held;
  const amount = request.amount ?? limit;
  if (amount > limit || amount === 0) return { ok: false, code: 'invalid_request' };
  applyEntry(model, {
    ref: request.ref,
    kind: request.kind,
    amount,
    reservation: request.reservation,
  });
  return { ok: true };
}

/** The effect of one entry, as the model understands the ledger's rules. */
function applyEntry(
  model: Model,
  entry: { ref: string; kind: string; amount: number; reservation: string | null },
): void {
  model.entries.set(entry.ref, {
    kind: entry.kind,
    amount: entry.amount,
    reservation: entry.reservation,
  });
  const { amount } = entry;
  const reservation =
    entry.reservation === null ? undefined : model.reservations.get(entry.reservation);
  switch (entry.kind) {
    case 'grant':
      model.available += amount;
      model.total += amount;
      return;
    case 'reserve':
      model.available -= amount;
      model.reserved += amount;
      model.reservations.set(entry.ref, { amount, held: amount, charged: 0 });
      return;
    case 'settle':
      reservation!.held -= amount;
      reservation!.charged += amount;
      model.reserved -= amount;
      model.used += amount;
      return;
    default: {
      const fromHeld = Math.min(amount, reservation!.held);
      reservation!.held -= fromHeld;
      reservation!.charged -= amount - fromHeld;
      model.reserved -= fromHeld;
      model.used -= amount - fromHeld;
      model.available += amount;
    }
  }
}

const COST = { quick: 1, standard: 2 } as const;

/** What the model expects of a service verify with a request id. */
function modelVerify(
  model: Model,
  email: string,
  method: 'quick' | 'standard',
  requestId: string,
): Outcome {
  if (email.startsWith('deliverable@example.com')) return { ok: true, charged: 0 };
  const ref = `verify:${requestId}`;
  const cost = COST[method];
  const reserved = model.entries.get(ref);
  if (reserved !== undefined) {
    if (reserved.kind !== 'reserve' || reserved.amount !== cost)
      return { ok: false, code: 'conflict' };
    // A retry: only a hold left behind goes back.
    const held = model.reservations.get(ref)!.held;
    if (held > 0 && !model.entries.has(`${ref}:release`)) {
      applyEntry(model, { ref: `${ref}:release`, kind: 'release', amount: held, reservation: ref });
    }
    return { ok: true, charged: 0 };
  }
  if (cost > model.available) return { ok: false, code: 'insufficient_credits' };
  applyEntry(model, { ref, kind: 'reserve', amount: cost, reservation: ref });
  if (email.endsWith('@slow-dns.org')) {
    applyEntry(model, { ref: `${ref}:refund`, kind: 'refund', amount: cost, reservation: ref });
    return { ok: true, charged: 0 };
  }
  applyEntry(model, { ref: `${ref}:settle`, kind: 'settle', amount: cost, reservation: ref });
  return { ok: true, charged: cost };
}

// ---- the systems under test --------------------------------------------------------------

interface Real {
  system: LedgerSystem;
  accountId: string;
  /** Runs a step in a process that dies after `writes` ledger commits; undefined in memory. */
  crash?: (step: Step, writes: number) => Promise<void>;
}

/** The service in a child process on a SQLite file, restartable after a SIGKILL. */
class ChildSystem {
  private child!: ChildProcessWithoutNullStreams;
  private pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void }
  >();
  private nextId = 1;

  constructor(private readonly path: string) {}

  async start(): Promise<void> {
    const script = new URL('../helpers/ledger-child.ts', import.meta.url).pathname;
    this.child = spawn(process.execPath, ['--import', 'tsx', script, this.path]);
    this.pending = new Map();
    const ready = new Promise<void>((resolve, reject) => {
      this.pending.set(0, { resolve: () => resolve(), reject });
    });
    const pending = this.pending;
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const message = JSON.parse(line) as { id: number; result?: unknown; error?: string };
      const waiter = pending.get(message.id);
      pending.delete(message.id);
      if (message.error !== undefined) waiter?.reject(new Error(message.error));
      else waiter?.resolve(message.result);
    });
    this.child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    this.child.on('exit', () => {
      for (const waiter of pending.values()) waiter.reject(new Error('child exited'));
      pending.clear();
    });
    await ready;
  }

  call(op: keyof LedgerSystem, ...args: unknown[]): Promise<unknown> {
    const id = this.nextId++;
    const answer = new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
    this.child.stdin.write(`${JSON.stringify({ id, op, args })}\n`);
    return answer;
  }

  /** Sends a request that makes the process SIGKILL itself after `writes` ledger commits. */
  async crashDuring(writes: number, op: keyof LedgerSystem, ...args: unknown[]): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    const id = this.nextId++;
    this.pending.set(id, { resolve: () => {}, reject: () => {} });
    this.child.stdin.write(`${JSON.stringify({ id, op, args, crashAfterWrites: writes })}\n`);
    await exited;
  }

  stop(): void {
    this.child.kill('SIGKILL');
  }

  asSystem(): LedgerSystem {
    return {
      setup: () => this.call('setup') as Promise<string>,
      ledger: (...args) => this.call('ledger', ...args) as Promise<Outcome>,
      verify: (...args) => this.call('verify', ...args) as Promise<Outcome>,
      changePlan: (...args) => this.call('changePlan', ...args) as Promise<Outcome>,
      state: (...args) => this.call('state', ...args) as ReturnType<LedgerSystem['state']>,
    };
  }
}

// ---- the steps ----------------------------------------------------------------------------

type Step =
  | { op: 'ledger'; request: LedgerRequest }
  | { op: 'verify'; email: string; method: 'quick' | 'standard'; requestId: string }
  | { op: 'plan'; plan: PlanName };

const ref = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h');
const amount = fc.integer({ min: 1, max: 40 });
const verifyStep: fc.Arbitrary<Step> = fc.record({
  op: fc.constant('verify' as const),
  email: fc.constantFrom(
    'alice@example.org',
    'bad..dots@example.org',
    'bob@slow-dns.org',
    'deliverable@example.com',
  ),
  method: fc.constantFrom('quick' as const, 'standard' as const),
  requestId: ref,
});
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant('ledger' as const),
    request: fc.record({
      kind: fc.constant('grant' as const),
      ref: ref.map((r) => `grant-${r}`),
      amount,
    }),
  }),
  fc.record({
    op: fc.constant('ledger' as const),
    request: fc.record({
      kind: fc.constant('reserve' as const),
      ref: ref.map((r) => `res-${r}`),
      amount,
    }),
  }),
  fc.record({
    op: fc.constant('ledger' as const),
    request: fc.record({
      kind: fc.constant('settle' as const),
      ref: ref.map((r) => `settle-${r}`),
      reservation: ref.map((r) => `res-${r}`),
      amount: fc.integer({ min: 1, max: 20 }),
    }),
  }),
  fc.record({
    op: fc.constant('ledger' as const),
    request: fc.record(
      {
        kind: fc.constantFrom('release' as const, 'refund' as const),
        ref: ref.map((r) => `back-${r}`),
        reservation: ref.map((r) => `res-${r}`),
        amount: fc.integer({ min: 1, max: 20 }),
      },
      { requiredKeys: ['kind', 'ref', 'reservation'] },
    ),
  }),
  verifyStep,
  fc.record({
    op: fc.constant('plan' as const),
    plan: fc.constantFrom<PlanName>('free', 'starter', 'enterprise'),
  }),
);

function runOnModel(model: Model, step: Step): Outcome {
  switch (step.op) {
    case 'ledger':
      return modelLedger(model, step.request);
    case 'verify':
      return modelVerify(model, step.email, step.method, step.requestId);
    case 'plan':
      model.plan = step.plan;
      return { ok: true };
  }
}

function runOnReal(real: Real, step: Step): Promise<Outcome> {
  switch (step.op) {
    case 'ledger':
      return real.system.ledger(real.accountId, step.request);
    case 'verify':
      return real.system.verify(real.accountId, step.email, step.method, step.requestId);
    case 'plan':
      return real.system.changePlan(real.accountId, step.plan);
  }
}

/** Compares the system with the model and checks the ledger's invariants. */
async function check(model: Model, real: Real): Promise<LedgerEntry[]> {
  const { balance, entries, plan } = await real.system.state(real.accountId);
  expect(balance).toEqual({
    available: model.available,
    reserved: model.reserved,
    used: model.used,
    total: model.total,
  });
  expect(plan).toBe(model.plan);
  expect(balance.available).toBeGreaterThanOrEqual(0);
  expect(entries.reduce((sum, entry) => sum + entry.delta, 0)).toBe(balance.available);
  const refs = entries.map((entry) => entry.ref);
  expect(new Set(refs).size).toBe(refs.length);
  expect(entries).toHaveLength(model.entries.size);
  // No reservation charged beyond what it reserved.
  for (const [reservationRef, reservation] of model.reservations) {
    const charged = entries
      .filter((entry) => entry.reservation === reservationRef && entry.kind === 'settle')
      .reduce((sum, entry) => sum + entry.amount, 0);
    expect(charged).toBeLessThanOrEqual(reservation.amount);
  }
  return entries;
}

class StepCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly step: Step,
    /** Ledger commits before the process is killed, or undefined for no crash. */
    readonly crashAfterWrites: number | undefined,
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: Model, real: Real): Promise<void> {
    if (this.crashAfterWrites !== undefined && real.crash !== undefined) {
      const before = (await real.system.state(real.accountId)).entries.length;
      await real.crash(this.step, this.crashAfterWrites);
      // The interrupted request ran whole, in part, or not at all: take in what it wrote.
      const { entries, plan } = await real.system.state(real.accountId);
      for (const entry of entries.slice(before)) applyEntry(model, entry);
      model.plan = plan as PlanName;
    } else {
      const expected = runOnModel(model, this.step);
      const actual = await runOnReal(real, this.step);
      expect(actual).toEqual(expected);
    }
    await check(model, real);
  }
  toString(): string {
    const crash =
      this.crashAfterWrites === undefined ? '' : `crash after ${this.crashAfterWrites} writes of `;
    return `${crash}${JSON.stringify(this.step)}`;
  }
}

const commandsArb = (crashes: boolean) =>
  fc.commands(
    [
      stepArb.map((step) => new StepCommand(step, undefined)),
      ...(crashes
        ? [
            // Crashes favour verifies: three ledger writes, so a crash can fall between them.
            fc
              .tuple(fc.oneof(verifyStep, verifyStep, stepArb), fc.integer({ min: 0, max: 3 }))
              .map(([step, writes]) => new StepCommand(step, writes)),
          ]
        : []),
    ],
    { maxCommands: crashes ? 25 : 60 },
  );

// ---- the runs -----------------------------------------------------------------------------

const dir = mkdtempSync(join(tmpdir(), 'mailverdict-ledger-model-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('credits ledger against a model', () => {
  it('holds on the memory store', async () => {
    await fc.assert(
      fc.asyncProperty(commandsArb(false), async (commands) => {
        const service = modelService(createMemoryStore());
        const system = ledgerSystem(service);
        const accountId = await system.setup();
        await fc.asyncModelRun(
          () => ({ model: newModel(), real: { system, accountId } }),
          commands,
        );
      }),
      fcParams({ numRuns: 200 }),
    );
  });

  it('holds on SQLite in a process killed with SIGKILL between and during steps', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(commandsArb(true), async (commands) => {
        const child = new ChildSystem(join(dir, `model-${run++}.db`));
        await child.start();
        try {
          const system = child.asSystem();
          const accountId = await system.setup();
          const real: Real = {
            system,
            accountId,
            crash: async (step, writes) => {
              const [op, ...args]: [keyof LedgerSystem, ...unknown[]] =
                step.op === 'ledger'
                  ? ['ledger', accountId, step.request]
                  : step.op === 'verify'
                    ? ['verify', accountId, step.email, step.method, step.requestId]
                    : ['changePlan', accountId, step.plan];
              await child.crashDuring(writes, op, ...args);
              await child.start();
            },
          };
          await fc.asyncModelRun(() => ({ model: newModel(), real }), commands);
        } finally {
          child.stop();
        }
      }),
      fcParams({ numRuns: 12 }),
    );
  }, 300_000);
});
