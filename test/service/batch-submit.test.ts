import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import type { Dns } from '../../src/ports/dns.js';
import type { Store } from '../../src/ports/store.js';
import { createService } from '../../src/compose/service.js';
import { type BatchOptions, type Service } from '../../src/service/service.js';
import { chunkByDomain } from '../../src/service/batch/chunks.js';
import { createManualClock } from '../../src/testing.js';
import { gatedDns } from '../helpers/fakes.js';
import { refusal, text, STORES } from '../helpers/service.js';

/**
 * Batch jobs as customers and hostile callers meet them through the library (README "Batch
 * jobs"): what counts as the same address, what is free, what the
 * credits say at every moment, and what is refused.
 */

describe.each(STORES)('batch submission (%s)', (_name, makeStore) => {
  let services: Service[] = [];
  afterEach(async () => {
    for (const service of services) await service.stop();
    services = [];
  });

  async function setup(
    options: { dns?: Dns; credits?: number; store?: Store; batch?: BatchOptions } = {},
  ) {
    const store = options.store ?? makeStore();
    const service = createService({
      engine: createEngine(options.dns === undefined ? { offline: true } : { dns: options.dns }),
      store,
      batch: { baseUrl: 'https://api.example.com/', ...options.batch },
    });
    services.push(service);
    const account = await service.admin.createAccount({
      email: 'ops@example.org',
      plan: 'enterprise',
      credits: options.credits ?? 1000,
    });
    return { service, store, caller: { accountId: account.id } };
  }

  async function ndjson(service: Service, caller: { accountId: string }, id: string) {
    return (await text(await service.batchResults(caller, id, { format: 'ndjson' })))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  it('counts an address once whatever the case of its domain or its IDN spelling', async () => {
    const { service, store, caller } = await setup();
    const emails = ['ann@bücher.de', 'ann@xn--bcher-kva.de', 'Ann@BÜCHER.DE', 'ann@Bücher.De'];
    const { id } = await service.submitBatch(caller, { emails, method: 'quick' });
    await service.batchWork.idle();
    const records = await ndjson(service, caller, id);
    expect(records).toHaveLength(4);
    expect(records.map((r) => r.duplicate === true)).toEqual([false, true, true, true]);
    expect(await store.balance(caller.accountId)).toMatchObject({ used: 1, reserved: 0 });
    expect(await service.batchStatus(caller, id)).toMatchObject({
      status: 'completed',
      processed: 4,
      valid: 4,
      percent_complete: 100,
    });
  });

  it('completes a batch of test addresses and their repeats on 0 credits, for every method', async () => {
    const { service, store, caller } = await setup({ credits: 0 });
    for (const method of ['quick', 'standard', 'smtp'] as const) {
      const emails = [
        'deliverable@example.com',
        'Risky@Example.com',
        'undeliverable@example.com',
        'DELIVERABLE@example.com',
      ];
      const { id } = await service.submitBatch(caller, { emails, method });
      await service.batchWork.idle();
      // The engine here cannot probe: nothing needs it to, every answer was known at submission.
      expect(await service.batchStatus(caller, id)).toMatchObject({
        status: 'completed',
        processed: 4,
        valid: 2,
        invalid: 1,
        risky: 1,
      });
      const reasons = (await ndjson(service, caller, id)).map((r) => r.reason);
      expect(reasons).toEqual([
        'accepted_email',
        'low_deliverability',
        'rejected_email',
        'accepted_email',
      ]);
    }
    expect(await store.balance(caller.accountId)).toEqual({
      available: 0,
      reserved: 0,
      used: 0,
      total: 0,
    });
    expect(await store.listHolds(caller.accountId)).toEqual([]);
  });

  it('keeps the path of a baseUrl given without a trailing slash in download_url', async () => {
    const { service, caller } = await setup({
      batch: { baseUrl: 'https://example.net/mailverdict' },
    });
    const { id } = await service.submitBatch(caller, { emails: ['a@example.org'] });
    await service.batchWork.idle();
    expect((await service.batchStatus(caller, id)).download_url).toBe(
      `https://example.net/mailverdict/v1/verify/${id}/results`,
    );
  });

  it.each([
    ['a C1 control character (NEL)', 'a\u0085b@example.org'],
    ['a C1 control character (CSI)', '\u009b31m@example.org'],
    ['a lone high surrogate', '\ud800@example.org'],
    ['a lone low surrogate', 'a\udc00@example.org'],
  ])('refuses %s as invalid_request on emails, reserving nothing', async (_n, bad) => {
    const { service, store, caller } = await setup();
    const error = await refusal(
      service.submitBatch(caller, { emails: ['ok@example.org', bad], method: 'quick' }),
    );
    expect(error).toMatchObject({ code: 'invalid_request', status: 400 });
    expect(error.context.field).toBe('emails');
    expect(error.message).toContain('emails[1]');
    expect(await store.listJobs('processing')).toEqual([]);
    expect(await store.balance(caller.accountId)).toMatchObject({ available: 1000, reserved: 0 });
  });

  it('takes a well-formed astral character (a surrogate pair) as text', async () => {
    const { service, caller } = await setup();
    const { id } = await service.submitBatch(caller, {
      emails: ['\u{1f600}@example.org'],
      method: 'quick',
    });
    await service.batchWork.idle();
    expect((await ndjson(service, caller, id))[0]?.email).toBe('\u{1f600}@example.org');
  });

  it('takes exactly 50,000 addresses and refuses 50,001', async () => {
    const { service, caller } = await setup({ credits: 100_000 });
    const emails = Array.from({ length: 50_000 }, (_, i) => `u${i}@example.org`);
    const created = await service.submitBatch(caller, { emails, method: 'quick' });
    expect(created.total_emails).toBe(50_000);
    const error = await refusal(
      service.submitBatch(caller, { emails: [...emails, 'one@more.org'], method: 'quick' }),
    );
    expect(error).toMatchObject({ code: 'invalid_request' });
    expect(error.context.field).toBe('emails');
    await service.batchWork.idle();
    expect(await service.batchStatus(caller, created.id)).toMatchObject({
      status: 'completed',
      processed: 50_000,
    });
  });

  it('holds what it reserved: spending the rest elsewhere cannot starve a running job', async () => {
    const dns = gatedDns({ 'example.org': ['mx.example.org'] });
    const { service, store, caller } = await setup({ dns, credits: 5 });
    const emails = ['a@example.org', 'b@example.org', 'not an address'];
    const { id } = await service.submitBatch(caller, { emails, method: 'quick' });
    const held = await store.balance(caller.accountId);
    expect(held).toEqual({ available: 2, reserved: 3, used: 0, total: 5 });
    // The other 2 credits go to another batch; a third finds none.
    await service.submitBatch(caller, {
      emails: ['c@example.org', 'd@example.org'],
      method: 'quick',
    });
    const error = await refusal(service.submitBatch(caller, { emails: ['e@example.org'] }));
    expect(error).toMatchObject({ code: 'insufficient_credits', status: 402 });
    expect(error.context).toEqual({ needed: 2, available: 0 });
    // The sums hold at every moment while the jobs land their results.
    dns.open();
    const seen: number[] = [];
    for (;;) {
      const { available, reserved, used, total } = await store.balance(caller.accountId);
      expect(available + reserved + used).toBe(total);
      seen.push(used);
      const { status } = await service.batchStatus(caller, id);
      if (status !== 'processing') break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await service.batchWork.idle();
    expect(await service.batchStatus(caller, id)).toMatchObject({ status: 'completed' });
    expect(await store.balance(caller.accountId)).toEqual({
      available: 0,
      reserved: 0,
      used: 5,
      total: 5,
    });
  });
});

describe.each(STORES)('a job waiting for a runner (%s)', (_name, makeStore) => {
  afterEach(() => vi.useRealTimers());

  it('keeps its hold while it waits: a sweep and other spending cannot starve it', async () => {
    // Only the runner's renewal timer is faked, so that it fires when the test says.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    // From the real now: the STORES' own sweep timers read the real time.
    const clock = createManualClock(Date.now());
    const dns = gatedDns({ 'example.org': ['mx.example.org'] });
    const store = makeStore();
    const service = createService({
      engine: createEngine({ dns }),
      store,
      clock,
      batch: { jobsAtOnce: 1, holdTtlMs: 60_000, renewEveryMs: 10_000 },
    });
    try {
      const account = await service.admin.createAccount({ email: 'o@example.org', credits: 4 });
      const caller = { accountId: account.id };
      const running = await service.submitBatch(caller, {
        emails: ['a@example.org'],
        method: 'quick',
      });
      // The only runner is busy: this one waits, 2 credits held.
      const waiting = await service.submitBatch(caller, {
        emails: ['b@example.org', 'c@example.org'],
        method: 'quick',
      });
      expect(await store.balance(caller.accountId)).toMatchObject({ available: 1, reserved: 3 });
      // Two minutes pass, the renewals fire, then the sweeper runs.
      for (let i = 0; i < 12; i++) {
        clock.advance(10_000);
        await vi.advanceTimersByTimeAsync(10_000);
      }
      await service.admin.sweepHolds();
      expect(await store.balance(caller.accountId)).toMatchObject({ available: 1, reserved: 3 });
      // The credit left is spent elsewhere; the waiting job still has what it was promised.
      await service.submitBatch(caller, { emails: ['d@example.net'], method: 'quick' });
      dns.open();
      await service.batchWork.idle();
      for (const id of [running.id, waiting.id]) {
        expect(await service.batchStatus(caller, id)).toMatchObject({ status: 'completed' });
      }
      expect(await store.balance(caller.accountId)).toEqual({
        available: 0,
        reserved: 0,
        used: 4,
        total: 4,
      });
    } finally {
      dns.open();
      await service.stop();
    }
  });
});

describe('chunks for worker processes (mailverdict/bullmq)', () => {
  it("keeps a domain's addresses together whatever its case or IDN spelling", () => {
    const items = [
      'a@bücher.de',
      'x@other.example',
      'b@xn--bcher-kva.de',
      'y@OTHER.example',
      'c@BÜCHER.DE',
      'd@bu\u0308cher.de',
    ].map((email, position) => ({ position, email }));
    // Chunks of 4: the 4 bücher.de addresses fill one, the 2 of other.example the next.
    expect(chunkByDomain(items, 4)).toEqual([
      [0, 2, 4, 5],
      [1, 3],
    ]);
  });
});
