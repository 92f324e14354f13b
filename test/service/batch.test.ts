import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { createEngine } from '../../src/compose/engine.js';
import type { Dns } from '../../src/ports/dns.js';
import type { JobRecord, Store } from '../../src/ports/store.js';
import type { JobWork } from '../../src/ports/batch-runner.js';
import { createService } from '../../src/compose/service.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { type Service } from '../../src/service/service.js';
import {
  createManualClock,
  createMemoryWebhookSender,
  type ManualClock,
} from '../../src/testing.js';
import { eventually } from '../helpers/waiting.js';
import { gatedDns } from '../helpers/fakes.js';
import { refusal, text, STORES } from '../helpers/service.js';
import { turnCounter } from '../helpers/turns.js';

describe.each(STORES)('batch jobs (%s)', (_name, makeStore) => {
  let services: Service[] = [];
  afterEach(async () => {
    for (const service of services) await service.stop();
    services = [];
  });

  async function setup(
    options: {
      dns?: Dns;
      credits?: number;
      store?: Store;
      clock?: ManualClock;
      /** Domains verified at once (the batch's concurrency). */
      concurrency?: number;
      /** The batch's slice budget. */
      sliceMs?: number;
    } = {},
  ) {
    const store = options.store ?? makeStore();
    const service = createService({
      engine: createEngine(options.dns === undefined ? { offline: true } : { dns: options.dns }),
      store,
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      batch: {
        baseUrl: 'https://api.example.com/',
        retentionMs: 3_600_000,
        flushSize: 7,
        ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
        ...(options.sliceMs === undefined ? {} : { sliceMs: options.sliceMs }),
      },
    });
    services.push(service);
    const account = await service.admin.createAccount({
      email: 'ops@example.org',
      plan: 'enterprise',
      credits: options.credits ?? 1000,
    });
    return { service, store, caller: { accountId: account.id } };
  }

  it('verifies every address once, in input order, charging billable addresses only', async () => {
    const { service, caller, store } = await setup();
    const emails = [
      'alice@example.org',
      'not an address',
      'Alice@example.org',
      'bob@example.com',
      'alice@example.org',
      'info@mailinator.com',
    ];
    const created = await service.submitBatch(caller, { emails, method: 'quick' });
    expect(created).toMatchObject({ status: 'processing', total_emails: 6 });
    expect(created.id).toMatch(/^batch_/);
    await service.batchWork.idle();

    const status = await service.batchStatus(caller, created.id);
    expect(status).toMatchObject({
      id: created.id,
      status: 'completed',
      total_emails: 6,
      processed: 6,
      percent_complete: 100,
      download_url: `https://api.example.com/v1/verify/${created.id}/results`,
    });
    expect(status.valid + status.invalid + status.risky).toBe(6);

    const body = JSON.parse(await text(await service.batchResults(caller, created.id))) as {
      results: Record<string, unknown>[];
    };
    // A duplicate repeats its first occurrence's record (case-insensitive local part).
    expect(body.results.map((r) => r.email)).toEqual([
      'alice@example.org',
      'not an address',
      'alice@example.org',
      'bob@example.com',
      'alice@example.org',
      'info@mailinator.com',
    ]);
    expect(body.results.map((r) => r.duplicate === true)).toEqual([
      false,
      false,
      true,
      false,
      true,
      false,
    ]);
    // Each record carries its address as submitted: a duplicate its own spelling.
    expect(body.results.map((r) => r.input)).toEqual(emails);
    // 4 billable (the duplicates are free) at 1 credit each, settled once, nothing held.
    expect(await store.balance(caller.accountId)).toMatchObject({
      used: 4,
      reserved: 0,
      available: 996,
    });
    const entries = await service.admin.ledger(caller.accountId);
    expect(entries.filter((e) => e.kind === 'settle')).toHaveLength(4);
  });

  it('lets the event loop turn between slices of an offline job: a timer set at submission finds it processing', async () => {
    const emails = Array.from({ length: 1_500 }, (_, i) => `user${i}@domain${i % 40}.com`);
    /** The job's status at the first turn of the event loop after its submission. */
    const atFirstTurn = async (sliceMs: number) => {
      const { service, caller } = await setup({ sliceMs, credits: 10_000 });
      const { id } = await service.submitBatch(caller, { emails, method: 'quick' });
      const status = await new Promise<Awaited<ReturnType<Service['batchStatus']>>>((resolve) =>
        setImmediate(() => resolve(service.batchStatus(caller, id))),
      );
      await service.batchWork.idle();
      expect((await service.batchStatus(caller, id)).processed).toBe(emails.length);
      return status;
    };
    const sliced = await atFirstTurn(0);
    expect(sliced.status).toBe('processing');
    expect(sliced.processed).toBeLessThan(emails.length);
    // Without slices the whole job runs on resolved promises before the loop turns once.
    expect(await atFirstTurn(Number.POSITIVE_INFINITY)).toMatchObject({
      status: 'completed',
      processed: emails.length,
    });
  });

  it('serializes a download in slices, the same bytes whatever their length', async () => {
    const { service, caller } = await setup({ sliceMs: 0, credits: 10_000 });
    // Three pages of the store (RESULTS_PAGE_SIZE 500).
    const emails = Array.from({ length: 1_200 }, (_, i) => `user${i % 1_100}@domain${i % 9}.com`);
    const created = await service.submitBatch(caller, { emails, method: 'quick' });
    await service.batchWork.idle();
    const counter = turnCounter();
    const sliced = await text(await service.batchResults(caller, created.id, { format: 'csv' }));
    expect(counter.stop()).toBeGreaterThanOrEqual(2);
    const { service: whole, caller: wholeCaller } = await setup({
      sliceMs: Number.POSITIVE_INFINITY,
      credits: 10_000,
    });
    const again = await whole.submitBatch(wholeCaller, { emails, method: 'quick' });
    await whole.batchWork.idle();
    const unsliced = await text(await whole.batchResults(wholeCaller, again.id, { format: 'csv' }));
    expect(sliced.split('\r\n')).toHaveLength(emails.length + 2);
    expect(sliced).toBe(unsliced);
  });

  it("carries each verdict's risk factors and syntax error in its record", async () => {
    const { service, caller } = await setup();
    const emails = ['info@mailinator.com', 'bad..dots@example.org', 'bob@example.com'];
    const created = await service.submitBatch(caller, { emails, method: 'standard' });
    await service.batchWork.idle();
    const records = (
      await text(await service.batchResults(caller, created.id, { format: 'ndjson' }))
    )
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const engine = createEngine({ offline: true });
    const expected = await Promise.all(
      emails.map(async (email) => {
        const verdict = await engine.verify(email, { method: 'standard' });
        return { risk_factors: [...verdict.riskFactors], error: verdict.error };
      }),
    );
    expect(records.map(({ risk_factors, error }) => ({ risk_factors, error }))).toEqual(expected);
    expect(records[0]?.risk_factors).toEqual(expect.arrayContaining(['disposable', 'role']));
    expect(records[1]?.error).toMatchObject({ code: 'consecutive_dots' });
    expect(records[2]).toMatchObject({ risk_factors: [], error: null });
  });

  it('makes test addresses and filter matches free', async () => {
    const { service, caller, store } = await setup();
    await service.createFilter(caller, {
      value: 'blocked.example',
      type: 'domain',
      action: 'block',
    });
    const created = await service.submitBatch(caller, {
      emails: ['x@sub.blocked.example', 'a@example.org'],
      method: 'quick',
    });
    await service.batchWork.idle();
    const ndjson = await text(await service.batchResults(caller, created.id, { format: 'ndjson' }));
    const records = ndjson
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { reason: string });
    expect(records[0]?.reason).toBe('blocked_by_filter');
    expect((await store.balance(caller.accountId)).used).toBe(1);
  });

  it('streams CSV with a header, one row per address', async () => {
    const { service, caller } = await setup();
    const created = await service.submitBatch(caller, {
      emails: ['a@example.org', 'a@example.org', '=cmd@example.org'],
      method: 'quick',
    });
    await service.batchWork.idle();
    const csv = await text(await service.batchResults(caller, created.id, { format: 'csv' }));
    const lines = csv.trim().split('\r\n');
    // The address as submitted leads, as in the CLI's records.
    expect(lines[0]).toMatch(/^input,email,state,score,reason,.*,duplicate$/);
    expect(lines).toHaveLength(4);
    expect(lines[2]?.endsWith(',true')).toBe(true);
    expect(lines[3]?.startsWith("'=cmd@example.org")).toBe(true);
  });

  it('refuses 402 with needed and available when credits are short, storing nothing', async () => {
    const { service, caller, store } = await setup({ credits: 2 });
    const error = await refusal(
      service.submitBatch(caller, { emails: ['a@x.org', 'b@x.org', 'c@x.org'], method: 'quick' }),
    );
    expect(error).toMatchObject({ code: 'insufficient_credits', status: 402 });
    expect(error.context).toEqual({ needed: 3, available: 2 });
    expect(await store.listJobs('processing')).toEqual([]);
    expect(await store.balance(caller.accountId)).toMatchObject({ available: 2, reserved: 0 });
  });

  it.each([
    [
      '51,000 emails',
      { emails: Array.from({ length: 51_000 }, (_, i) => `a${i}@x.org`) },
      'emails',
    ],
    ['an empty list', { emails: [] }, 'emails'],
    ['a non-string', { emails: ['a@x.org', 42] }, 'emails'],
    ['a 10 KB address', { emails: [`${'a'.repeat(10_240)}@x.org`] }, 'emails'],
    ['an unknown method', { emails: ['a@x.org'], method: 'deep' }, 'method'],
    [
      'credentials',
      { emails: ['a@x.org'], callbackUrl: 'https://u:p@hooks.example.com/' },
      'callback_url',
    ],
    [
      'a non-http scheme',
      { emails: ['a@x.org'], callbackUrl: 'ftp://hooks.example.com/' },
      'callback_url',
    ],
    [
      'plain http',
      { emails: ['a@x.org'], callbackUrl: 'http://hooks.example.com/' },
      'callback_url',
    ],
    ['127.0.0.1', { emails: ['a@x.org'], callbackUrl: 'https://127.0.0.1/' }, 'callback_url'],
    ['10.0.0.1', { emails: ['a@x.org'], callbackUrl: 'https://10.0.0.1/' }, 'callback_url'],
    [
      '[::ffff:127.0.0.1]',
      { emails: ['a@x.org'], callbackUrl: 'https://[::ffff:127.0.0.1]/' },
      'callback_url',
    ],
    ['2130706433', { emails: ['a@x.org'], callbackUrl: 'https://2130706433/' }, 'callback_url'],
    ['0x7f.1', { emails: ['a@x.org'], callbackUrl: 'https://0x7f.1/' }, 'callback_url'],
    ['localhost', { emails: ['a@x.org'], callbackUrl: 'https://localhost:8443/' }, 'callback_url'],
    [
      '169.254.169.254',
      { emails: ['a@x.org'], callbackUrl: 'https://169.254.169.254/' },
      'callback_url',
    ],
    [
      '100.64.0.1 (CGNAT)',
      { emails: ['a@x.org'], callbackUrl: 'https://100.64.0.1/' },
      'callback_url',
    ],
  ])(
    'refuses %s as invalid_request naming the field, reserving nothing',
    async (_n, input, field) => {
      const { service, caller, store } = await setup();
      const before = await service.admin.ledger(caller.accountId);
      const error = await refusal(service.submitBatch(caller, input as never));
      expect(error).toMatchObject({ code: 'invalid_request', status: 400 });
      expect(error.context.field).toBe(field);
      expect(await service.admin.ledger(caller.accountId)).toEqual(before);
      expect(await store.listJobs('processing')).toEqual([]);
    },
  );

  it('hides one account jobs from another (404)', async () => {
    const { service, caller } = await setup();
    const other = await service.admin.createAccount({ email: 'b@example.org', credits: 10 });
    const created = await service.submitBatch(caller, { emails: ['a@example.org'] });
    await service.batchWork.idle();
    const stranger = { accountId: other.id };
    expect(await refusal(service.batchStatus(stranger, created.id))).toMatchObject({
      code: 'not_found',
    });
    expect(await refusal(service.batchResults(stranger, created.id))).toMatchObject({
      code: 'not_found',
    });
  });

  it('answers batch_not_completed with the progress before completion', async () => {
    const dns = gatedDns({ 'example.org': ['mx.example.org'] });
    const { service, caller } = await setup({ dns });
    const created = await service.submitBatch(caller, {
      emails: ['a@example.org', 'b@example.org'],
      method: 'quick',
    });
    expect((await service.batchStatus(caller, created.id)).status).toBe('processing');
    const error = await refusal(service.batchResults(caller, created.id));
    expect(error).toMatchObject({ code: 'batch_not_completed', status: 409 });
    expect(error.context).toMatchObject({ processed: 0, total_emails: 2, percent_complete: 0 });
    dns.open();
    await service.batchWork.idle();
    expect((await service.batchStatus(caller, created.id)).status).toBe('completed');
  });

  it('gives back the credits of results it could not get (the unknown family)', async () => {
    const dns = createMemoryDns({
      'example.org': ['mx.example.org'],
      'down.example': { kind: 'failure', code: 'timeout' },
    });
    const { service, caller, store } = await setup({ dns });
    const created = await service.submitBatch(caller, {
      emails: ['a@example.org', 'b@down.example'],
      method: 'quick',
    });
    await service.batchWork.idle();
    const ndjson = await text(await service.batchResults(caller, created.id, { format: 'ndjson' }));
    const reasons = ndjson
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { reason: string }).reason);
    const unknown = reasons.filter((r) =>
      ['timeout', 'no_connect', 'unavailable_smtp', 'unexpected_error', 'invalid_smtp'].includes(r),
    );
    const credits = await store.balance(caller.accountId);
    expect(credits.used).toBe(2 - unknown.length);
    expect(credits.reserved).toBe(0);
    expect(credits.available + credits.used).toBe(1000);
  });

  it('purges a finished job after its retention', async () => {
    const clock = createManualClock(Date.UTC(2026, 10, 1));
    const { service, caller } = await setup({ clock });
    const created = await service.submitBatch(caller, { emails: ['a@example.org'] });
    await service.batchWork.idle();
    clock.advance(3_599_999);
    expect(await service.batchWork.purgeExpired()).toBe(0);
    clock.advance(1);
    expect(await service.batchWork.purgeExpired()).toBe(1);
    expect(await refusal(service.batchStatus(caller, created.id))).toMatchObject({
      code: 'not_found',
    });
  });

  it('answers the same job for the same idempotency key, and 409 for another request', async () => {
    const { service, caller, store } = await setup();
    const input = { emails: ['a@example.org', 'b@example.org'], method: 'quick' as const };
    const first = await service.submitBatch(caller, input, { requestId: 'k1' });
    const again = await service.submitBatch(caller, input, { requestId: 'k1' });
    expect(again).toEqual(first);
    expect(
      await refusal(
        service.submitBatch(caller, { emails: ['c@example.org'] }, { requestId: 'k1' }),
      ),
    ).toMatchObject({ code: 'idempotency_conflict' });
    await service.batchWork.idle();
    expect((await store.balance(caller.accountId)).used).toBe(2);
  });

  it('fails a job that cannot run, gives its credits back and says so by webhook', async () => {
    const store = makeStore();
    const webhooks = createMemoryWebhookSender();
    // An engine that breaks under the runner: the job fails.
    const broken = createEngine({ offline: true });
    const service = createService({
      engine: {
        ...broken,
        verifyMany: () => {
          throw new Error('the engine broke');
        },
      },
      store,
      batch: { webhookSender: webhooks },
    });
    services.push(service);
    const account = await service.admin.createAccount({ email: 'o@example.org', credits: 100 });
    const caller = { accountId: account.id };
    const created = await service.submitBatch(caller, {
      emails: ['a@example.org', 'b@example.org'],
      method: 'quick',
      callbackUrl: 'https://hooks.example.com/done',
    });
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    const status = await service.batchStatus(caller, created.id);
    expect(status).toMatchObject({ status: 'failed' });
    expect(status.reason).toMatch(/^internal_error/);
    expect(status.download_url).toBeUndefined();
    expect(await store.balance(account.id)).toMatchObject({ available: 100, reserved: 0, used: 0 });
    expect(webhooks.sent).toHaveLength(1);
    const sent = webhooks.sent[0];
    expect(sent?.url).toBe('https://hooks.example.com/done');
    expect(JSON.parse(sent?.body ?? '')).toMatchObject({
      event: 'batch.failed',
      id: created.id,
      status: 'failed',
      download_url: null,
    });
    expect(sent?.headers['webhook-signature']).toMatch(/^v1,/);
  });

  it('sends each attempt once when several processes deliver from one outbox', async () => {
    const store = makeStore();
    const clock = createManualClock(Date.UTC(2026, 10, 1));
    // The first attempt fails; once its retry is due, every process sees it due.
    const webhooks = createMemoryWebhookSender(() =>
      webhooks.sent.length === 1
        ? { kind: 'status', status: 500 }
        : { kind: 'status', status: 200 },
    );
    const [first, second] = [0, 1].map(() =>
      createService({
        engine: createEngine({ offline: true }),
        store,
        clock,
        batch: { webhookSender: webhooks, webhookRetryScheduleMs: [60_000] },
      }),
    ) as [Service, Service];
    services.push(first, second);
    const account = await first.admin.createAccount({ email: 'o@example.org', credits: 100 });
    const caller = { accountId: account.id };
    const created = await first.submitBatch(caller, {
      emails: ['a@example.org'],
      method: 'quick',
      callbackUrl: 'https://hooks.example.com/done',
    });
    await first.batchWork.idle();
    await first.batchWork.deliverWebhooks();
    expect(webhooks.sent).toHaveLength(1);
    expect(await store.jobWebhooks(created.id)).toMatchObject([{ status: 'pending' }]);
    clock.advance(120_000);
    // Both read the message as due; only one lease takes.
    await Promise.all([first.batchWork.deliverWebhooks(), second.batchWork.deliverWebhooks()]);
    await Promise.all([first.batchWork.deliverWebhooks(), second.batchWork.deliverWebhooks()]);
    expect(webhooks.sent).toHaveLength(2);
    expect(await store.jobWebhooks(created.id)).toMatchObject([{ status: 'delivered' }]);
  });

  it('a part of a job whose hold another part remade settles against the new hold', async () => {
    const store = makeStore();
    // The job's work without a runner: the test runs two parts of it, as two workers would.
    let work: JobWork | undefined;
    const service = createService({
      engine: createEngine({ offline: true }),
      store,
      batch: {
        runner: (given) => {
          work = given;
          return { start() {}, resume: async () => 0, stop: async () => {}, idle: async () => {} };
        },
      },
    });
    services.push(service);
    const account = await service.admin.createAccount({ email: 'o@example.org', credits: 100 });
    const emails = Array.from({ length: 10 }, (_, i) => `user${i}@example.org`);
    const { id } = await service.submitBatch(
      { accountId: account.id },
      { emails, method: 'quick' },
    );
    const job = (await store.getJob(account.id, id)) as JobRecord;
    // The hold lapses (a long wait in a queue) and the sweeper releases it.
    expect(await store.sweep(Date.now() + 86_400_000)).toBe(1);
    const items = await store.pendingJobItems(id, -1, 100);
    const part = async function* (from: number, to: number) {
      yield* items.slice(from, to);
    };
    const signal = new AbortController().signal;
    // The first part remakes the hold for all that is left; the second, which read the job
    // before, finds it remade and settles against it instead of failing the job.
    await work?.verify(job, part(0, 4), signal);
    await work?.verify(job, part(4, 10), signal);
    await work?.finish(job);
    expect(await service.batchStatus({ accountId: account.id }, id)).toMatchObject({
      status: 'completed',
      processed: 10,
    });
    expect(await store.balance(account.id)).toMatchObject({ used: 10, reserved: 0 });
  });

  it('matches IP filters while running and gives their credits back', async () => {
    const dns = createMemoryDns(
      { 'example.org': ['mx.example.org'], 'blockedmx.org': ['mx.blockedmx.org'] },
      { 'mx.example.org': ['192.0.2.10'], 'mx.blockedmx.org': ['198.51.100.20'] },
    );
    const { service, caller, store } = await setup({ dns });
    await service.createFilter(caller, {
      value: '198.51.100.0/24',
      type: 'ip_address',
      action: 'block',
    });
    const created = await service.submitBatch(caller, {
      emails: ['a@example.org', 'b@blockedmx.org', 'c@blockedmx.org'],
      method: 'quick',
    });
    await service.batchWork.idle();
    const reasons = (
      await text(await service.batchResults(caller, created.id, { format: 'ndjson' }))
    )
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { reason: string }).reason);
    expect(reasons.slice(1)).toEqual(['blocked_by_filter', 'blocked_by_filter']);
    expect(reasons[0]).not.toBe('blocked_by_filter');
    // Reserved for 3 at submission; the 2 matches are given back, 1 is charged.
    expect(await store.balance(caller.accountId)).toMatchObject({ used: 1, reserved: 0 });
  });

  it('keeps its read-ahead with an IP filter: the next domains are asked about before the first answers', async () => {
    const zones: Record<string, readonly string[]> = {};
    const hosts: Record<string, readonly string[]> = {};
    const emails: string[] = [];
    for (let d = 0; d < 20; d++) {
      zones[`d${d}.example.net`] = [`mx.d${d}.example.net`];
      // The mail hosts of even domains are in the blocked range.
      hosts[`mx.d${d}.example.net`] = [d % 2 === 0 ? `198.51.100.${d}` : `192.0.2.${d}`];
      for (let i = 0; i < 3; i++) emails.push(`u${i}@d${d}.example.net`);
    }
    const dns = gatedDns(zones, hosts);
    const { service, caller, store } = await setup({ dns, concurrency: 2 });
    await service.createFilter(caller, {
      value: '198.51.100.0/24',
      type: 'ip_address',
      action: 'block',
    });
    const created = await service.submitBatch(caller, { emails, method: 'quick' });
    // No MX answer comes back until the gate opens, yet the run asks about more domains than
    // its two slots hold: the filter waits inside each domain's work, not in front of the
    // next address (it held every address behind the first one's lookups).
    await eventually(
      () => new Set(dns.asked).size > 2,
      'domains beyond the first two asked about before any answer',
    );
    dns.open();
    await service.batchWork.idle();
    const records = (
      await text(await service.batchResults(caller, created.id, { format: 'ndjson' }))
    )
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { email: string; reason: string });
    const blocked = records.filter((r) => r.reason === 'blocked_by_filter').map((r) => r.email);
    expect(blocked).toEqual(emails.filter((email) => /@d\d*[02468]\.example\.net$/.test(email)));
    expect(await store.balance(caller.accountId)).toMatchObject({ used: 30, reserved: 0 });
  });

  it('resumes a stopped job on start without verifying or charging finished addresses again', async () => {
    const store = makeStore();
    const zones: Record<string, readonly string[]> = {};
    const emails: string[] = [];
    for (let d = 0; d < 40; d++) {
      zones[`d${d}.example`] = [`mx.d${d}.example`];
      for (let i = 0; i < 5; i++) emails.push(`u${i}@d${d}.example`);
    }
    const dns = gatedDns(zones);
    const first = await setup({ dns, store });
    const created = await first.service.submitBatch(first.caller, { emails, method: 'quick' });
    dns.open();
    // Stop as soon as some results are stored.
    while ((await first.service.batchStatus(first.caller, created.id)).processed === 0) {
      await new Promise((r) => setTimeout(r, 1));
    }
    await first.service.stop();
    const partial = await first.service.batchStatus(first.caller, created.id);

    const asked: string[] = [];
    const inner = createMemoryDns(zones);
    const second = createService({
      engine: createEngine({
        dns: { mx: (domain, signal) => (asked.push(domain), inner.mx(domain, signal)) },
      }),
      store,
      batch: { flushSize: 7 },
    });
    services.push(second);
    expect(await second.start()).toEqual({ resumed: partial.status === 'processing' ? 1 : 0 });
    await second.batchWork.idle();
    const done = await second.batchStatus(first.caller, created.id);
    expect(done).toMatchObject({ status: 'completed', processed: 200 });
    const results = (
      await text(await second.batchResults(first.caller, created.id, { format: 'ndjson' }))
    )
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { email: string }).email);
    expect(results).toEqual(emails);
    const entries = await second.admin.ledger(first.caller.accountId);
    const settles = entries.filter((e) => e.kind === 'settle');
    expect(settles).toHaveLength(200);
    expect(new Set(settles.map((e) => e.ref)).size).toBe(200);
    expect(await store.balance(first.caller.accountId)).toMatchObject({ used: 200, reserved: 0 });
    expect(await store.listHolds(first.caller.accountId)).toEqual([]);
  });
});

describe('batch options', () => {
  it('refuses counts it cannot run with when the service is created, naming the option', () => {
    for (const [option, value] of [
      ['concurrency', 0],
      ['perDomain', 2.5],
      ['jobsAtOnce', -1],
    ] as const) {
      expect(() =>
        createService({
          engine: createEngine({ offline: true }),
          store: createMemoryStore(),
          batch: { [option]: value },
        }),
      ).toThrow(new RangeError(`batch.${option} must be a whole number from 1, got ${value}`));
    }
  });
});
