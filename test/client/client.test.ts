import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  ApiError,
  createClient,
  NetworkError,
  type BatchRecord,
  type BatchStatus,
  type ClientOptions,
  type CompactResult,
  type DetailedField,
  type DetailedResult,
  type ShapeBResult,
} from '../../src/client.js';
import { createMemoryWebhookSender } from '../../src/testing.js';
import { gatedDns } from '../helpers/fakes.js';
import { startLoopbackApi, testClient, type LoopbackApi } from './helpers.js';

/** mailverdict/client against mailverdict/node on loopback: every call, as a user makes it. */
let loopback: LoopbackApi;
beforeAll(async () => {
  loopback = await startLoopbackApi();
});
afterAll(async () => {
  await loopback.close();
});

async function client(credits = 1000) {
  const { accountId, secret } = await loopback.key({ credits });
  return { client: testClient(loopback.server.url, secret), accountId, secret };
}

describe('mailverdict/client on loopback', () => {
  it('verify answers the shape its options select, typed by them', async () => {
    const { client: api } = await client();
    const compact = await api.verify('ann@example.org');
    expectTypeOf(compact).toEqualTypeOf<CompactResult>();
    expect(Object.keys(compact)).toEqual(['email', 'state', 'score', 'reason']);
    expect(compact).toMatchObject({ email: 'ann@example.org', state: 'deliverable' });

    const detailed = await api.verify('info@mailinator.com', { detailed: true, method: 'quick' });
    expectTypeOf(detailed).toEqualTypeOf<DetailedResult>();
    expect(detailed).toMatchObject({ disposable: true, domain: 'mailinator.com' });
    expect(Object.keys(detailed)).toContain('did_you_mean');

    const selected = await api.verify('ann@example.org', { fields: ['state', 'score'] });
    expectTypeOf(selected).toEqualTypeOf<Pick<DetailedResult, 'email' | 'state' | 'score'>>();
    expect(Object.keys(selected).sort()).toEqual(['email', 'score', 'state']);

    const shapeB = await api.verify('ann@example.org', { smtp: false, siteSource: 'signup' });
    expectTypeOf(shapeB).toEqualTypeOf<ShapeBResult>();
    expect(shapeB).toMatchObject({ status: 'valid', site_source: 'signup' });
    expect(shapeB.risk_factors).toEqual([]);
  });

  it('reads the rate limit of the last answer', async () => {
    const { client: api } = await client();
    expect(api.rateLimit).toBeUndefined();
    await api.account();
    const first = api.rateLimit;
    expect(first).toMatchObject({ limit: 300, remaining: 299 });
    expect(Number.isInteger(first?.reset)).toBe(true);
    await api.account();
    expect(api.rateLimit?.remaining).toBe(298);
  });

  it('refusals are ApiErrors with the status, the code and the envelope context', async () => {
    const { client: api } = await client(0);
    const noCredit = await api.verify('ann@example.org').catch((error: unknown) => error);
    expect(noCredit).toBeInstanceOf(ApiError);
    expect(noCredit).not.toBeInstanceOf(NetworkError);
    expect(noCredit).toMatchObject({
      status: 402,
      code: 'insufficient_credits',
      details: { needed: 2, available: 0 },
    });

    const unknownField = await api
      .verify('ann@example.org', { fields: ['nope' as DetailedField] })
      .catch((error: unknown) => error);
    expect(unknownField).toMatchObject({
      status: 400,
      code: 'invalid_request',
      details: { field: 'fields', allowed: expect.arrayContaining(['state']) },
    });

    const badKey = createClient({ baseUrl: loopback.server.url, apiKey: 'mv_sk_nope' });
    await expect(badKey.account()).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
    // Not retried: one request, one refusal.
    expect(api.waited).toEqual([]);
  });

  it('submits a batch, waits with progress, and streams its records in input order', async () => {
    const { client: api, accountId } = await client();
    const emails = [
      'ann@example.org',
      'info@mailinator.com',
      'bad..dots@example.org',
      'ann@example.org',
    ];
    const job = await api.submitBatch(emails, { method: 'quick' });
    expect(job).toMatchObject({ status: 'processing', total_emails: 4 });
    const progress: BatchStatus[] = [];
    const done = await api.waitForBatch(job.id, { onProgress: (status) => progress.push(status) });
    expect(done).toMatchObject({ id: job.id, status: 'completed', processed: 4 });
    expect(progress.at(-1)).toEqual(done);

    const records: BatchRecord[] = [];
    for await (const record of api.batchResults(job.id)) records.push(record);
    expect(records.map((r) => r.email)).toEqual(emails);
    expect(records.map((r) => r.input)).toEqual(emails);
    expect(records[1]?.risk_factors).toContain('disposable');
    expect(records[2]?.error?.code).toBe('consecutive_dots');
    expect(records[3]).toMatchObject({ duplicate: true });

    const csv = await api.downloadResults(job.id, { format: 'csv' });
    expect(csv.contentType).toMatch(/^text\/csv/);
    const text = await new Response(csv.body).text();
    expect(text.split('\r\n')[0]).toMatch(/^input,email,state,score,reason,/);
    // Three billable addresses at one credit: the repeat is free.
    expect((await loopback.api.store.balance(accountId)).used).toBe(3);
  });

  it('the same idempotency key gives the same job, and the same verify charged once', async () => {
    const { client: api, accountId } = await client();
    const first = await api.submitBatch(['a@example.org'], { idempotencyKey: 'import-1' });
    const again = await api.submitBatch(['a@example.org'], { idempotencyKey: 'import-1' });
    expect(again.id).toBe(first.id);
    await api.waitForBatch(first.id);
    const conflict = await api
      .submitBatch(['b@example.org'], { idempotencyKey: 'import-1' })
      .catch((error: unknown) => error);
    expect(conflict).toMatchObject({ status: 409, code: 'idempotency_conflict' });

    const before = (await loopback.api.store.balance(accountId)).used;
    await api.verify('c@example.org', { idempotencyKey: 'verify-c' });
    await api.verify('c@example.org', { idempotencyKey: 'verify-c' });
    expect((await loopback.api.store.balance(accountId)).used).toBe(before + 2);
  });

  it('results asked too early are a 409 with the progress; a job that waits is polled', async () => {
    const dns = gatedDns({ 'example.org': ['mx.example.org'] });
    const gated = await startLoopbackApi({ dns });
    try {
      const { secret } = await gated.key();
      const api = testClient(gated.server.url, secret);
      const job = await api.submitBatch(['a@example.org', 'b@example.org']);
      const early = await (async () => {
        for await (const record of api.batchResults(job.id)) return record;
        return undefined;
      })().catch((error: unknown) => error);
      expect(early).toMatchObject({
        status: 409,
        code: 'batch_not_completed',
        details: { id: job.id, status: 'processing', processed: 0 },
      });
      let polls = 0;
      const done = api.waitForBatch(job.id, {
        onProgress: () => {
          if (++polls === 3) dns.open();
        },
      });
      expect(await done).toMatchObject({ status: 'completed', processed: 2 });
      expect(polls).toBeGreaterThanOrEqual(3);
      // Faster at first, then every pollMs (2 s by default).
      expect(api.waited.slice(0, 2)).toEqual([250, 500]);
    } finally {
      await gated.close();
    }
  });

  it("a job's webhook shows in its status and is delivered again; a job without one is a 409", async () => {
    // A receiver that fails the first delivery, given up at once (no retries), then answers.
    const answers = [500];
    const webhooks = createMemoryWebhookSender(() => ({
      kind: 'status',
      status: answers.shift() ?? 204,
    }));
    const hooked = await startLoopbackApi(
      { offline: true },
      { webhookSender: webhooks, webhookRetryScheduleMs: [] },
    );
    try {
      const { secret } = await hooked.key();
      const api = testClient(hooked.server.url, secret);
      const job = await api.submitBatch(['a@example.org'], {
        callbackUrl: 'https://hooks.example.com/in',
      });
      await api.waitForBatch(job.id);
      await hooked.api.service.batchWork.deliverWebhooks();
      const failed = await api.batch(job.id);
      expect(failed.webhook).toEqual({
        status: 'failed',
        attempts: 1,
        last_status: 500,
        last_error: 'HTTP 500',
        next_attempt_at: null,
      });
      const queued = await api.redeliverWebhook(job.id);
      expectTypeOf(queued).toEqualTypeOf<BatchStatus>();
      expect(queued).toMatchObject({ id: job.id, webhook: { status: 'pending', attempts: 0 } });
      await hooked.api.service.batchWork.deliverWebhooks();
      expect((await api.batch(job.id)).webhook).toMatchObject({
        status: 'delivered',
        last_status: 204,
      });
      expect(webhooks.sent).toHaveLength(2);

      const plain = await api.submitBatch(['b@example.org']);
      await api.waitForBatch(plain.id);
      expect((await api.batch(plain.id)).webhook).toBeUndefined();
      await expect(api.redeliverWebhook(plain.id)).rejects.toMatchObject({
        status: 409,
        code: 'conflict',
      });
    } finally {
      await hooked.close();
    }
  });

  it('filters: create, list, delete, and their refusals', async () => {
    const { client: api } = await client();
    const created = await api.filters.create({
      value: 'Spam.Example',
      type: 'domain',
      action: 'block',
      reason: 'complaints',
    });
    expect(created).toMatchObject({
      filter_type: 'domain',
      value: 'spam.example',
      reason: 'complaints',
    });
    await expect(
      api.filters.create({ value: 'spam.example', type: 'domain', action: 'allow' }),
    ).rejects.toMatchObject({ status: 409 });
    const page = await api.filters.list({ type: 'domain', perPage: 10 });
    expect(page).toMatchObject({ total: 1, page: 1, per_page: 10 });
    expect(page.filters.map((f) => f.id)).toEqual([created.id]);
    expect((await api.verify('x@spam.example')).reason).toBe('blocked_by_filter');
    expect(await api.filters.delete(created.id)).toEqual({ id: created.id, deleted: true });
    await expect(api.filters.delete(created.id)).rejects.toMatchObject({
      status: 404,
      code: 'not_found',
    });
    expect((await api.verify('x@spam.example')).reason).not.toBe('blocked_by_filter');
  });

  it('account: plan, credits, rate limit, billing period', async () => {
    const { client: api } = await client(500);
    const account = await api.account();
    expect(account).toMatchObject({
      plan: 'enterprise',
      credits: { available: 500, reserved: 0, used: 0, total: 500 },
      rate_limit: { per_minute: 300 },
    });
    expect(account.billing_period.start).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it("a caller's abort stops the call with its reason, not retried", async () => {
    const { secret } = await loopback.key();
    const controller = new AbortController();
    const api = createClient({
      baseUrl: loopback.server.url,
      apiKey: secret,
      signal: controller.signal,
    });
    controller.abort(new Error('shutting down'));
    await expect(api.account()).rejects.toThrow('shutting down');
  });

  it('a call given what it cannot send rejects (it never throws synchronously)', async () => {
    const { client: api } = await client();
    const rejected = [api.batch(''), api.filters.delete(''), api.verify(42 as unknown as string)];
    for (const call of rejected) await expect(call).rejects.toThrow(TypeError);
  });

  it('refuses a baseUrl or key it could not use', () => {
    expect(() => createClient({ baseUrl: 'ftp://x', apiKey: 'k' })).toThrow(TypeError);
    expect(() => createClient({ baseUrl: 'not a url', apiKey: 'k' })).toThrow(TypeError);
    expect(() => createClient({ baseUrl: 'https://u:p@x', apiKey: 'k' })).toThrow(/credentials/);
    expect(() => createClient({ baseUrl: 'https://x', apiKey: 'a\r\nb' })).toThrow(TypeError);
    expect(() => createClient({ baseUrl: 'https://x', apiKey: 'k', maxRetries: -1 })).toThrow(
      TypeError,
    );
  });

  it('refuses options that are no object with a TypeError that says so, not a null dereference', () => {
    for (const options of [null, undefined, 'https://x', 7]) {
      expect(() => createClient(options as unknown as ClientOptions)).toThrow(
        /^createClient expects its options as an object/,
      );
    }
  });
});
