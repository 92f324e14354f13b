import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../../src/ports/store.js';
import type { LedgerRequest } from '../../src/store/rules/ledger.js';
import type { PlanName } from '../../src/service/plans.js';
import { createRedisStore } from '../../src/redis.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { fcParams } from '../helpers/fast-check.js';
import {
  ledgerSystem,
  MODEL_START_CREDITS,
  modelService,
  shiftingClock,
  type LedgerSystem,
  type Outcome,
} from '../helpers/ledger-system.js';
import { redisAvailable, startRedisServer } from '../helpers/redis-server.js';

/**
 * Model-based test of the credits ledger (src/store/rules/ledger.ts): random sequences of grants,
 * reserves, settles, releases, refunds, verifies (with and without idempotency keys, reused with
 * the same and with different requests, and copies of one request at once), plan changes, and
 * moves of the clock past every hold's expiry followed by the sweep, run against the service
 * and against a plain model of what each should do. On memory and Redis the service runs in
 * the test's process; on SQLite and Redis it also runs in a child process that is SIGKILLed at
 * every commit point, sometimes with a request in flight, and restarted; the model then takes
 * in whatever the interrupted request wrote. (On Redis this is what shows that the ledger's
 * TypeScript rules, applied through guarded writes, hold there too.) After every step:
 * the balances match the model, available + reserved + used = total, the balance is the sum
 * of the entries and never negative, no reference appears twice, and after a sweep no hold
 * older than its expiry remains.
 */

// ---- the model ----------------------------------------------------------------------------

interface Reservation {
  amount: number;
  held: number;
  charged: number;
}

/** An idempotency key: the request it is bound to, and its first answer (null: running). */
interface ModelKey {
  fingerprint: string;
  answer: Outcome | null;
  /** A running attempt whose lease ran out (the clock moved past it): the same request may retry. */
  stale: boolean;
  /** Clock offset when the key was taken: it binds for 24 hours from then. */
  since: number;
}

interface Model {
  available: number;
  reserved: number;
  used: number;
  total: number;
  entries: Map<string, { kind: string; amount: number; reservation: string | null }>;
  reservations: Map<string, Reservation>;
  keys: Map<string, ModelKey>;
  plan: PlanName;
  /** How far the service clock runs ahead of Date.now. */
  offset: number;
  /** Names the entries of verifies, whose references are the service's random ones. */
  verifies: number;
  /** An offline engine: verifies are synchronous and nothing times out. */
  offline: boolean;
}

/** The model of a new account: its initial grant and the free plan. */
function newModel(offline: boolean): Model {
  const model: Model = {
    available: 0,
    reserved: 0,
    used: 0,
    total: 0,
    entries: new Map(),
    reservations: new Map(),
    keys: new Map(),
    plan: 'free',
    offset: 0,
    verifies: 0,
    offline,
  };
  applyEntry(model, {
    ref: 'mv:initial_grant',
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

const DAY_MS = 86_400_000;
/** Each sweep step moves the clock this far: past every hold (an hour at most), not a key's day. */
const SWEEP_ADVANCE_MS = 2 * 3_600_000;

/** What the model expects of one service verify, with or without an idempotency key. */
function modelVerify(
  model: Model,
  email: string,
  method: 'quick' | 'standard',
  requestId: string | null,
): Outcome {
  const fingerprint = `${method}|${email}`;
  const key = requestId === null ? undefined : model.keys.get(requestId);
  if (key !== undefined && model.offset - key.since < DAY_MS) {
    if (key.fingerprint !== fingerprint) return { ok: false, code: 'idempotency_conflict' };
    if (key.answer !== null) return key.answer;
    if (!key.stale) return { ok: false, code: 'request_in_progress' };
  }
  const answer = modelCharge(model, email, method);
  if (requestId !== null && answer.ok) {
    model.keys.set(requestId, { fingerprint, answer, stale: false, since: model.offset });
  } else if (requestId !== null) {
    model.keys.delete(requestId);
  }
  return answer;
}

function modelCharge(model: Model, email: string, method: 'quick' | 'standard'): Outcome {
  if (email.startsWith('deliverable@example.com')) return { ok: true, charged: 0 };
  const cost = COST[method];
  if (cost > model.available) return { ok: false, code: 'insufficient_credits' };
  const ref = `verify#${model.verifies++}`;
  applyEntry(model, { ref, kind: 'reserve', amount: cost, reservation: ref });
  if (email.endsWith('@slow-dns.org') && !model.offline) {
    applyEntry(model, { ref: `${ref}:refund`, kind: 'refund', amount: cost, reservation: ref });
    return { ok: true, charged: 0 };
  }
  applyEntry(model, { ref: `${ref}:settle`, kind: 'settle', amount: cost, reservation: ref });
  return { ok: true, charged: cost };
}

/** Moves the clock on and sweeps: every hold has expired, every running lease too. */
function modelSweep(model: Model): void {
  model.offset += SWEEP_ADVANCE_MS;
  for (const [ref, reservation] of model.reservations) {
    if (reservation.held === 0) continue;
    applyEntry(model, {
      ref: `mv:expired:${ref}`,
      kind: 'release',
      amount: reservation.held,
      reservation: ref,
    });
  }
  for (const key of model.keys.values()) if (key.answer === null) key.stale = true;
}

// ---- the systems under test --------------------------------------------------------------

interface Real {
  system: LedgerSystem;
  accountId: string;
  /**
   * Runs a step in a process that dies after `writes` ledger commits, then restarts it with
   * its clock `offset` ahead; undefined in memory.
   */
  crash?: (step: Step, writes: number, offset: number) => Promise<void>;
}

/** The service in a child process on a SQLite file or Redis, restartable after a SIGKILL. */
class ChildSystem {
  private child!: ChildProcessWithoutNullStreams;
  private pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void }
  >();
  private nextId = 1;

  /** `location`: a SQLite file, or a Redis URL with the key prefix of the run. */
  constructor(
    private readonly location: string,
    private readonly offline: boolean,
    private readonly keyPrefix = '',
  ) {}

  /** Starts the process with its clock `offset` ms ahead of Date.now. */
  async start(offset = 0): Promise<void> {
    const script = new URL('../helpers/ledger-child.ts', import.meta.url).pathname;
    const args = [
      script,
      this.location,
      String(offset),
      this.offline ? 'offline' : 'online',
      this.keyPrefix,
    ];
    this.child = spawn(process.execPath, ['--import', 'tsx', ...args]);
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
      verifyConcurrently: (...args) =>
        this.call('verifyConcurrently', ...args) as Promise<Outcome[]>,
      advanceAndSweep: (...args) => this.call('advanceAndSweep', ...args) as Promise<Outcome>,
      idempotency: (...args) =>
        this.call('idempotency', ...args) as ReturnType<LedgerSystem['idempotency']>,
      holds: (...args) => this.call('holds', ...args) as ReturnType<LedgerSystem['holds']>,
      now: () => this.call('now') as Promise<number>,
      changePlan: (...args) => this.call('changePlan', ...args) as Promise<Outcome>,
      state: (...args) => this.call('state', ...args) as ReturnType<LedgerSystem['state']>,
    };
  }
}

// ---- the steps ----------------------------------------------------------------------------

type VerifyStep = {
  op: 'verify';
  email: string;
  method: 'quick' | 'standard';
  requestId: string | null;
  /** Copies of the request sent at once (with a key only). */
  copies: number;
};
type Step =
  | { op: 'ledger'; request: LedgerRequest }
  | VerifyStep
  | { op: 'sweep' }
  | { op: 'plan'; plan: PlanName };

const ref = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h');
const amount = fc.integer({ min: 1, max: 40 });
const verifyStep: fc.Arbitrary<Step> = fc
  .record({
    op: fc.constant('verify' as const),
    email: fc.constantFrom(
      'alice@example.org',
      'bad..dots@example.org',
      'bob@slow-dns.org',
      'deliverable@example.com',
    ),
    method: fc.constantFrom('quick' as const, 'standard' as const),
    // Few keys, so that they are reused, with the same request and with others.
    requestId: fc.option(fc.constantFrom('k1', 'k2', 'k3'), { nil: null }),
    copies: fc.constantFrom(1, 1, 1, 4),
  })
  .map((step) => (step.requestId === null ? { ...step, copies: 1 } : step));
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
  verifyStep,
  fc.constant({ op: 'sweep' as const }),
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
    case 'sweep':
      modelSweep(model);
      return { ok: true };
    case 'plan':
      model.plan = step.plan;
      return { ok: true };
  }
}

/** The step's call on the system: op and arguments, the same in memory and over the pipe. */
function callOf(step: Step, accountId: string): [keyof LedgerSystem, ...unknown[]] {
  switch (step.op) {
    case 'ledger':
      return ['ledger', accountId, step.request];
    case 'verify':
      return step.copies > 1
        ? ['verifyConcurrently', accountId, step.email, step.method, step.requestId, step.copies]
        : ['verify', accountId, step.email, step.method, step.requestId];
    case 'sweep':
      return ['advanceAndSweep', SWEEP_ADVANCE_MS];
    case 'plan':
      return ['changePlan', accountId, step.plan];
  }
}

async function runOnReal(real: Real, step: Step): Promise<Outcome | Outcome[]> {
  const [op, ...args] = callOf(step, real.accountId);
  const call = real.system[op] as (...a: unknown[]) => Promise<Outcome | Outcome[]>;
  return call(...args);
}

/** Compares the system with the model and checks the ledger's invariants. */
async function check(model: Model, real: Real, swept: boolean): Promise<LedgerEntry[]> {
  const { balance, entries, plan } = await real.system.state(real.accountId);
  expect(balance).toEqual({
    available: model.available,
    reserved: model.reserved,
    used: model.used,
    total: model.total,
  });
  expect(balance.available + balance.reserved + balance.used).toBe(balance.total);
  expect(plan).toBe(model.plan);
  expect(balance.available).toBeGreaterThanOrEqual(0);
  expect(balance.total).toBeLessThanOrEqual(Number.MAX_SAFE_INTEGER);
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
  const holds = await real.system.holds(real.accountId);
  expect(holds.reduce((sum, hold) => sum + hold.held, 0)).toBe(balance.reserved);
  if (swept) {
    // After the sweep, no hold older than its expiry remains.
    const now = await real.system.now();
    for (const hold of holds) expect(hold.expiresAt).toBeGreaterThan(now);
  }
  return entries;
}

/** After a crash: what the interrupted step did to its idempotency key, read off the store. */
async function takeInKey(model: Model, real: Real, step: VerifyStep): Promise<void> {
  if (step.requestId === null) return;
  const fingerprint = `${step.method}|${step.email}`;
  const known = model.keys.get(step.requestId);
  const live = known !== undefined && model.offset - known.since < DAY_MS;
  // A live key bound to another request refused this one: it is unchanged.
  if (live && known.fingerprint !== fingerprint) return;
  const stored = await real.system.idempotency(real.accountId, step.requestId);
  if (stored === null) {
    model.keys.delete(step.requestId);
    return;
  }
  const answer: Outcome | null =
    stored.charged === null ? null : { ok: true, charged: stored.charged };
  const kept = live && !(known.answer === null && known.stale);
  model.keys.set(step.requestId, {
    fingerprint,
    answer,
    stale: false,
    since: kept ? known.since : model.offset,
  });
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
      // A sweep step moves the clock whether or not its process lives to sweep.
      if (this.step.op === 'sweep') model.offset += SWEEP_ADVANCE_MS;
      await real.crash(this.step, this.crashAfterWrites, model.offset);
      // The interrupted request ran whole, in part, or not at all: take in what it wrote.
      const { entries, plan } = await real.system.state(real.accountId);
      for (const entry of entries.slice(before)) applyEntry(model, entry);
      model.plan = plan as PlanName;
      if (this.step.op === 'verify') await takeInKey(model, real, this.step);
      if (this.step.op === 'sweep') {
        for (const key of model.keys.values()) if (key.answer === null) key.stale = true;
      }
      await check(model, real, false);
      return;
    }
    const expected = runOnModel(model, this.step);
    const actual = await runOnReal(real, this.step);
    if (Array.isArray(actual)) {
      // Copies of one request at once: each gets the one answer, or is told the first runs.
      expect(actual).toContainEqual(expected);
      for (const outcome of actual) {
        if (!isEqual(outcome, expected)) {
          expect(outcome).toEqual({ ok: false, code: 'request_in_progress' });
        }
      }
    } else {
      expect(actual).toEqual(expected);
    }
    await check(model, real, this.step.op === 'sweep');
  }
  toString(): string {
    const crash =
      this.crashAfterWrites === undefined ? '' : `crash after ${this.crashAfterWrites} writes of `;
    return `${crash}${JSON.stringify(this.step)}`;
  }
}

function isEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const commandsArb = (crashes: boolean) =>
  fc.commands(
    [
      stepArb.map((step) => new StepCommand(step, undefined)),
      ...(crashes
        ? [
            // Crashes favour verifies: two commits each (reserve with its key, then settle with
            // the answer), more for copies at once; k = 0..3 puts a crash at every point.
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
      fc.asyncProperty(commandsArb(false), fc.boolean(), async (commands, offline) => {
        const clock = shiftingClock();
        const service = modelService(createMemoryStore(), clock, offline);
        const system = ledgerSystem(service, clock);
        const accountId = await system.setup();
        await fc.asyncModelRun(
          () => ({ model: newModel(offline), real: { system, accountId } }),
          commands,
        );
      }),
      fcParams({ numRuns: 200 }),
    );
  });

  it('holds on SQLite in a process killed with SIGKILL between and during steps', async () => {
    let run = 0;
    await holdsThroughCrashes(
      (offline) => new ChildSystem(join(dir, `model-${run++}.db`), offline),
      12,
    );
  }, 300_000);

  it.runIf(redisAvailable())(
    'holds on Redis',
    async () => {
      const server = await startRedisServer();
      let run = 0;
      try {
        await fc.assert(
          fc.asyncProperty(commandsArb(false), fc.boolean(), async (commands, offline) => {
            const clock = shiftingClock();
            const store = createRedisStore(server.url, {
              keyPrefix: `model-${run++}:`,
              holdSweepMs: 0,
            });
            try {
              const system = ledgerSystem(modelService(store, clock, offline), clock);
              const accountId = await system.setup();
              await fc.asyncModelRun(
                () => ({ model: newModel(offline), real: { system, accountId } }),
                commands,
              );
            } finally {
              await store.close();
            }
          }),
          fcParams({ numRuns: 200 }),
        );
      } finally {
        await server.close();
      }
    },
    300_000,
  );

  it.runIf(redisAvailable())(
    'holds on Redis with its client process killed with SIGKILL between and during steps',
    async () => {
      const server = await startRedisServer();
      let run = 0;
      try {
        await holdsThroughCrashes(
          (offline) => new ChildSystem(server.url, offline, `model-${run++}:`),
          8,
        );
      } finally {
        await server.close();
      }
    },
    300_000,
  );
});

/** Runs the model against a child process that is killed and restarted at commit points. */
async function holdsThroughCrashes(
  childFor: (offline: boolean) => ChildSystem,
  numRuns: number,
): Promise<void> {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(commandsArb(true), async (commands) => {
      // Runs alternate between the asynchronous path (reserve, verify, settle: two commits)
      // and the synchronous one (one commit per verify).
      const offline = run++ % 2 === 1;
      const child = childFor(offline);
      await child.start();
      try {
        const system = child.asSystem();
        const accountId = await system.setup();
        const real: Real = {
          system,
          accountId,
          crash: async (step, writes, offset) => {
            const [op, ...args] = callOf(step, accountId);
            await child.crashDuring(writes, op, ...args);
            await child.start(offset);
          },
        };
        await fc.asyncModelRun(() => ({ model: newModel(offline), real }), commands);
      } finally {
        child.stop();
      }
    }),
    fcParams({ numRuns }),
  );
}
