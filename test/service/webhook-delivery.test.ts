import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { createService } from '../../src/compose/service.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import type { Store } from '../../src/ports/store.js';
import type { WebhookRequest, WebhookResponse } from '../../src/ports/webhook.js';
import type { Service } from '../../src/service/service.js';
import { gatedDns } from '../helpers/fakes.js';
import { recordingLogger } from '../helpers/logger.js';
import { refusal, STORES } from '../helpers/service.js';
import { eventually } from '../helpers/waiting.js';

const SCHEDULE = [1_000, 2_000];

/** A webhook sender answering from a script, one answer per attempt (200 once it runs out). */
function scriptedSender(script: (WebhookResponse | Promise<WebhookResponse>)[]) {
  const sent: WebhookRequest[] = [];
  return {
    sent,
    async send(request: WebhookRequest): Promise<WebhookResponse> {
      sent.push(request);
      return (await script.shift()) ?? { kind: 'status', status: 200 };
    },
  };
}

const status = (code: number): WebhookResponse => ({ kind: 'status', status: code });
const refused: WebhookResponse = {
  kind: 'error',
  code: 'forbidden_address',
  message: 'hooks.example.com resolves to 10.0.0.7, which is not a public address.',
};

describe.each(STORES)('webhook deliveries you can see and repeat (%s)', (_name, makeStore) => {
  const services: Service[] = [];
  afterEach(async () => {
    for (const service of services.splice(0)) await service.stop();
  });

  async function setup(
    script: (WebhookResponse | Promise<WebhookResponse>)[],
    options: { store?: Store; dns?: ReturnType<typeof gatedDns> } = {},
  ) {
    let now = Date.UTC(2026, 10, 1);
    const clock = { now: () => now, advance: (ms: number) => void (now += ms) };
    const sender = scriptedSender(script);
    const logger = recordingLogger();
    const service = createService({
      engine: createEngine(
        options.dns === undefined ? { offline: true } : { dns: options.dns ?? createMemoryDns({}) },
      ),
      store: options.store ?? makeStore(),
      clock,
      logger,
      batch: { webhookSender: sender, webhookRetryScheduleMs: SCHEDULE },
    });
    services.push(service);
    const account = await service.admin.createAccount({ email: 'ops@example.org', credits: 100 });
    const other = await service.admin.createAccount({ email: 'other@example.org', credits: 100 });
    return { service, sender, clock, logger, caller: { accountId: account.id }, other };
  }

  const submit = (service: Service, caller: { accountId: string }, callbackUrl?: string) =>
    service.submitBatch(caller, {
      emails: ['a@example.org', 'b@example.org'],
      method: 'quick',
      ...(callbackUrl === undefined ? {} : { callbackUrl }),
    });

  it('shows the delivery in the status: pending, retried, failed with its last error', async () => {
    const { service, clock, caller } = await setup([status(500), status(503), status(502)]);
    const created = await submit(service, caller, 'https://hooks.example.com/in');
    await service.batchWork.idle();
    // The first attempt goes out as the job finishes; this waits for it.
    await service.batchWork.deliverWebhooks();
    const retrying = (await service.batchStatus(caller, created.id)).webhook;
    expect(retrying).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_status: 500,
      last_error: 'HTTP 500',
    });
    const next = Date.parse(retrying?.next_attempt_at as string) - clock.now();
    expect(next).toBeGreaterThanOrEqual(800);
    expect(next).toBeLessThanOrEqual(1_200);

    for (let round = 0; round < 2; round++) {
      clock.advance(3_000);
      await service.batchWork.deliverWebhooks();
    }
    expect((await service.batchStatus(caller, created.id)).webhook).toEqual({
      status: 'failed',
      attempts: 3,
      last_status: 502,
      last_error: 'HTTP 502',
      next_attempt_at: null,
    });
  });

  it('a job still processing shows its webhook pending with nothing tried', async () => {
    const dns = gatedDns({ 'example.org': ['mx.example.org'] });
    const { service, caller } = await setup([], { dns });
    const created = await submit(service, caller, 'https://hooks.example.com/in');
    const processing = await service.batchStatus(caller, created.id);
    expect(processing.status).toBe('processing');
    expect(processing.webhook).toEqual({
      status: 'pending',
      attempts: 0,
      last_status: null,
      last_error: null,
      next_attempt_at: null,
    });
    // Nothing to deliver again before it finishes.
    const early = await refusal(service.redeliverWebhook(caller, created.id));
    expect([early.status, early.code]).toEqual([409, 'batch_not_completed']);
    dns.open();
    await service.batchWork.idle();
  });

  it('a refused address is a visible failure; redelivered once the receiver is fixed, it arrives', async () => {
    const { service, sender, clock, caller, logger } = await setup([refused]);
    const created = await submit(service, caller, 'https://hooks.example.com/in');
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    // One attempt: asking again never makes a private address public.
    const failed = (await service.batchStatus(caller, created.id)).webhook;
    expect(failed).toEqual({
      status: 'failed',
      attempts: 1,
      last_status: null,
      last_error: `forbidden_address: ${refused.kind === 'error' ? refused.message : ''}`,
      next_attempt_at: null,
    });
    expect(logger.events('webhook.failed')).toMatchObject([
      { level: 'warn', fields: { job_id: created.id, attempt: 1, status: null } },
    ]);

    // The receiver is fixed (say, its name now resolves to a public address).
    clock.advance(60_000);
    const queued = await service.redeliverWebhook(caller, created.id);
    expect(queued.webhook).toEqual({
      status: 'pending',
      attempts: 0,
      last_status: null,
      last_error: failed?.last_error,
      next_attempt_at: new Date(clock.now()).toISOString(),
    });
    expect(logger.events('webhook.queued')).toMatchObject([{ fields: { job_id: created.id } }]);
    await service.batchWork.deliverWebhooks();
    expect((await service.batchStatus(caller, created.id)).webhook).toEqual({
      status: 'delivered',
      attempts: 1,
      last_status: 200,
      last_error: null,
      next_attempt_at: null,
    });
    // The same event, under the same webhook-id: a receiver that has it may drop it.
    expect(sender.sent).toHaveLength(2);
    const [first, second] = sender.sent as [WebhookRequest, WebhookRequest];
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(second.body).toBe(first.body);
  });

  it('refuses a job without a callback (409 conflict), one of another account (404)', async () => {
    const { service, caller, other } = await setup([]);
    const plain = await submit(service, caller);
    await service.batchWork.idle();
    expect((await service.batchStatus(caller, plain.id)).webhook).toBeUndefined();
    const none = await refusal(service.redeliverWebhook(caller, plain.id));
    expect([none.status, none.code]).toEqual([409, 'conflict']);
    expect(none.message).toMatch(/without a callback_url/);

    const hooked = await submit(service, caller, 'https://hooks.example.com/in');
    await service.batchWork.idle();
    const foreign = await refusal(service.redeliverWebhook({ accountId: other.id }, hooked.id));
    expect([foreign.status, foreign.code]).toEqual([404, 'not_found']);
  });

  it('a redelivery queued while an attempt is in flight stands: the attempt does not undo it', async () => {
    let answer: (response: WebhookResponse) => void = () => {};
    const inFlight = new Promise<WebhookResponse>((resolve) => (answer = resolve));
    const { service, sender, caller, logger } = await setup([status(500), inFlight]);
    const created = await submit(service, caller, 'https://hooks.example.com/in');
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    expect((await service.batchStatus(caller, created.id)).webhook?.attempts).toBe(1);

    // The retry is due; its attempt hangs on the receiver while a redelivery is asked for.
    await service.redeliverWebhook(caller, created.id);
    const attempt = service.batchWork.deliverWebhooks();
    await eventually(() => sender.sent.length === 2, 'the retry is sent');
    await service.redeliverWebhook(caller, created.id);
    answer(status(500));
    await attempt;
    // The attempt's 500 was not written over the redelivery: the message stayed due now, and
    // the same round delivered it, as the first attempt of its new round. Had the 500 been
    // written, it would wait for its retry, attempts 2.
    expect(sender.sent).toHaveLength(3);
    expect((await service.batchStatus(caller, created.id)).webhook).toMatchObject({
      status: 'delivered',
      attempts: 1,
      last_status: 200,
    });
    // Its log says so, and counts it neither as a retry nor as a failure.
    expect(logger.events('webhook.superseded')).toMatchObject([
      { level: 'info', fields: { status: 500 } },
    ]);
    expect(logger.events('webhook.retrying')).toHaveLength(1);
  });

  it("lists the account's deliveries for an operator, the failed ones alone with failed", async () => {
    const { service, clock, caller, other } = await setup([refused, status(204)]);
    const bad = await submit(service, caller, 'https://hooks.example.com/bad');
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    clock.advance(1_000);
    const good = await submit(service, caller, 'https://hooks.example.com/good');
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();

    const all = await service.admin.listWebhooks(caller.accountId);
    expect(all.map((d) => [d.jobId, d.status, d.lastStatus])).toEqual([
      [good.id, 'delivered', 204],
      [bad.id, 'failed', null],
    ]);
    expect(all[0]).not.toHaveProperty('payload');
    const failed = await service.admin.listWebhooks(caller.accountId, { failed: true });
    expect(failed.map((d) => d.jobId)).toEqual([bad.id]);
    expect(await service.admin.listWebhooks(other.id)).toEqual([]);
    expect(await service.admin.listWebhooks(caller.accountId, { limit: 1 })).toHaveLength(1);
    const bounds = await refusal(service.admin.listWebhooks(caller.accountId, { limit: 0 }));
    expect(bounds.code).toBe('invalid_request');
    const unknown = await refusal(service.admin.listWebhooks('acct_nope'));
    expect(unknown.code).toBe('not_found');
  });
});
