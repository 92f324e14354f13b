import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { createService } from '../../src/compose/service.js';
import { createHandler } from '../../src/http/handler.js';
import { withRemoteAddress } from '../../src/http/client-ip.js';
import type { Store } from '../../src/ports/store.js';
import type { Service } from '../../src/service/service.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { StoreError } from '../../src/store/rules/store-error.js';
import { createMemoryWebhookSender } from '../../src/testing.js';
import { recordingLogger } from '../helpers/logger.js';

const services: Service[] = [];
afterEach(async () => {
  for (const service of services.splice(0)) await service.stop();
  vi.restoreAllMocks();
});

/** ioredis's words when Redis is away: what a client must never read. */
const IOREDIS_WORDS =
  'Redis is unreachable: Reached the max retries per request limit (which is 2). Refer to "maxRetriesPerRequest" option for details.';

async function setup(options: { store?: Store; answers?: number[]; logger?: boolean } = {}) {
  let now = Date.UTC(2026, 10, 1);
  const clock = { now: () => now, advance: (ms: number) => void (now += ms) };
  const answers = [...(options.answers ?? [200])];
  const webhooks = createMemoryWebhookSender(() => ({
    kind: 'status',
    status: answers.shift() ?? 200,
  }));
  const logger = recordingLogger();
  const service = createService({
    engine: createEngine({ offline: true }),
    store: options.store ?? createMemoryStore(),
    clock,
    ...(options.logger === false ? {} : { logger }),
    batch: { webhookSender: webhooks, webhookRetryScheduleMs: [1_000, 2_000] },
  });
  services.push(service);
  const account = await service.admin.createAccount({ email: 'ops@example.org', credits: 100 });
  return { service, logger, clock, accountId: account.id, webhooks };
}

describe('the service logger', () => {
  it("tells each job's life and each webhook attempt, one line each, failed ones at warn", async () => {
    const { service, logger, clock, accountId } = await setup({ answers: [500, 200] });
    const created = await service.submitBatch(
      { accountId },
      {
        emails: ['a@example.org', 'b@example.org'],
        method: 'quick',
        callbackUrl: 'https://hooks.example.com/in?token=receiver-secret',
      },
    );
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();

    expect(logger.events('job.submitted')).toMatchObject([
      {
        level: 'info',
        fields: {
          job_id: created.id,
          account_id: accountId,
          total_emails: 2,
          callback: 'https://hooks.example.com',
        },
      },
    ]);
    expect(logger.events('job.completed')).toMatchObject([
      { level: 'info', fields: { job_id: created.id, processed: 2 } },
    ]);
    const [retrying, ...others] = logger.events('webhook.retrying');
    expect(others).toEqual([]);
    expect(retrying).toMatchObject({
      level: 'warn',
      fields: { job_id: created.id, attempt: 1, status: 500, error: 'HTTP 500' },
    });
    const next = Date.parse(String(retrying?.fields.next_attempt_at));
    expect(next - clock.now()).toBeGreaterThanOrEqual(800);
    expect(next - clock.now()).toBeLessThanOrEqual(1_200);

    clock.advance(1_200);
    await service.batchWork.deliverWebhooks();
    expect(logger.events('webhook.delivered')).toMatchObject([
      { level: 'info', fields: { job_id: created.id, attempt: 2, status: 200 } },
    ]);
    // The receiver's token in the callback's query is never logged.
    expect(JSON.stringify(logger.lines)).not.toContain('receiver-secret');
  });

  it('a delivery given up is one warn line that says no more attempts come', async () => {
    const { service, logger, clock, accountId } = await setup({ answers: [500, 503, 410] });
    const created = await service.submitBatch(
      { accountId },
      { emails: ['a@example.org'], method: 'quick', callbackUrl: 'https://hooks.example.com/' },
    );
    await service.batchWork.idle();
    for (let round = 0; round < 3; round++) {
      await service.batchWork.deliverWebhooks();
      clock.advance(3_000);
    }
    const failed = logger.lines.filter((line) =>
      line.fields.event?.toString().startsWith('webhook.'),
    );
    expect(failed.map((line) => [line.level, line.fields.event, line.fields.attempt])).toEqual([
      ['warn', 'webhook.retrying', 1],
      ['warn', 'webhook.retrying', 2],
      ['warn', 'webhook.failed', 3],
    ]);
    expect(failed[2]?.fields).toMatchObject({
      job_id: created.id,
      status: 410,
      error: 'HTTP 410',
      next_attempt_at: null,
    });
  });

  it('says nothing without a logger', async () => {
    const written = vi.spyOn(process.stderr, 'write');
    const logged = vi.spyOn(console, 'error');
    const { service, accountId } = await setup({ answers: [500], logger: false });
    await service.submitBatch(
      { accountId },
      { emails: ['a@example.org'], method: 'quick', callbackUrl: 'https://hooks.example.com/' },
    );
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    expect(written).not.toHaveBeenCalled();
    expect(logged).not.toHaveBeenCalled();
  });

  it("a job stopped by a store's error fails with our words; the store's go to the log", async () => {
    const inner = createMemoryStore();
    let failing = false;
    const store: Store = {
      ...inner,
      async recordJobResults(...args) {
        if (failing) throw new StoreError('io', IOREDIS_WORDS);
        return inner.recordJobResults(...args);
      },
    };
    const { service, logger, accountId } = await setup({ store });
    failing = true;
    const created = await service.submitBatch(
      { accountId },
      { emails: ['a@example.org'], method: 'quick' },
    );
    await service.batchWork.idle();
    const status = await service.batchStatus({ accountId }, created.id);
    expect(status.status).toBe('failed');
    expect(status.reason).toMatch(/^internal_error: /);
    expect(status.reason).not.toMatch(/maxRetriesPerRequest|Redis/);
    const [error] = logger.events('job.error');
    expect(error).toMatchObject({ level: 'error', fields: { job_id: created.id } });
    expect((error?.fields.err as Error).message).toContain('maxRetriesPerRequest');
    expect(logger.events('job.failed')).toMatchObject([
      { level: 'warn', fields: { job_id: created.id, reason: status.reason } },
    ]);
  });
});

describe('the handler logger', () => {
  it('a 500 names no library; the log line has the error with its cause', async () => {
    const inner = createMemoryStore();
    let failing = false;
    const store: Store = {
      ...inner,
      async balance(accountId) {
        if (failing) throw new StoreError('io', IOREDIS_WORDS);
        return inner.balance(accountId);
      },
    };
    const { service, logger, accountId } = await setup({ store });
    const { secret } = await service.admin.createKey(accountId);
    const handler = createHandler(service, { logger });
    failing = true;
    const response = await handler(
      new Request('http://127.0.0.1/v1/account', {
        headers: { authorization: `Bearer ${secret}` },
      }),
    );
    expect(response.status).toBe(500);
    const body = (await response.json()) as { error: string; message: string };
    expect(body.error).toBe('internal_error');
    expect(body.message).toMatch(/data store could not be reached/);
    expect(body.message).not.toMatch(/maxRetriesPerRequest|Redis|ioredis/);
    const [line] = logger.events('request.error');
    expect(line).toMatchObject({
      level: 'error',
      fields: { method: 'GET', route: '/v1/account' },
    });
    expect(((line?.fields.err as Error).cause as Error).message).toBe(IOREDIS_WORDS);
  });

  it('a store that did not answer in time: the 500 says the change may still be applied', async () => {
    const inner = createMemoryStore();
    let failing = false;
    const store: Store = {
      ...inner,
      async balance(accountId) {
        if (failing) throw new StoreError('timeout', 'Redis did not answer in time');
        return inner.balance(accountId);
      },
    };
    const { service, accountId } = await setup({ store });
    const { secret } = await service.admin.createKey(accountId);
    const handler = createHandler(service);
    failing = true;
    const response = await handler(
      new Request('http://127.0.0.1/v1/account', {
        headers: { authorization: `Bearer ${secret}` },
      }),
    );
    expect(response.status).toBe(500);
    const body = (await response.json()) as { error: string; message: string };
    expect(body.error).toBe('internal_error');
    expect(body.message).toMatch(/did not answer in time; the change may still be applied/);
    expect(body.message).not.toMatch(/nothing was written|Redis/);
  });

  it('the access log names the route template, the key id and the client, never the key', async () => {
    const { service, logger, accountId } = await setup();
    const { secret, key } = await service.admin.createKey(accountId);
    const handler = createHandler(service, { logger, accessLog: true });
    const ask = (url: string) =>
      handler(withRemoteAddress(new Request(url), '203.0.113.9')).then((r) => r.status);
    expect(await ask(`http://127.0.0.1/v1/account?api_key=${secret}`)).toBe(200);
    expect(await ask(`http://127.0.0.1/v1/verify/batch_nope?api_key=${secret}`)).toBe(404);
    expect(await ask('http://127.0.0.1/v1/nowhere')).toBe(404);
    const lines = logger.events('request');
    expect(lines.map((line) => line.fields)).toMatchObject([
      {
        method: 'GET',
        route: '/v1/account',
        status: 200,
        key_id: key.id,
        client_ip: '203.0.113.9',
      },
      { route: '/v1/verify/{id}', status: 404, key_id: key.id },
      { route: null, status: 404, key_id: null },
    ]);
    expect(lines.every((line) => line.level === 'info')).toBe(true);
    expect(lines.every((line) => typeof line.fields.duration_ms === 'number')).toBe(true);
    expect(JSON.stringify(logger.lines)).not.toContain(secret);
    expect(JSON.stringify(logger.lines)).not.toContain('batch_nope');
  });

  it('no access log unless asked', async () => {
    const { service, logger, accountId } = await setup();
    const { secret } = await service.admin.createKey(accountId);
    const handler = createHandler(service, { logger });
    await handler(new Request(`http://127.0.0.1/v1/account?api_key=${secret}`));
    expect(logger.lines).toEqual([]);
  });
});
