import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeWebhookSender } from '../../src/adapters/node/webhook.js';
import { createEngine } from '../../src/compose/engine.js';
import type { WebhookSender } from '../../src/ports/webhook.js';
import { createService } from '../../src/compose/service.js';
import { type BatchOptions, type Service } from '../../src/service/service.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { createManualClock } from '../../src/testing.js';
import { recordingLogger } from '../helpers/logger.js';
import { freePort } from '../helpers/ports.js';
import { startWebhookReceiver, type WebhookHit } from '../helpers/webhook-receiver.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function setup(batch: BatchOptions, clock?: { now(): number }) {
  const store = createMemoryStore();
  const logger = recordingLogger();
  const service: Service = createService({
    engine: createEngine({ offline: true }),
    store,
    logger,
    ...(clock === undefined ? {} : { clock }),
    batch: {
      allowHttpCallbacks: true,
      allowPrivateNetworks: true,
      baseUrl: 'https://api.example.com/',
      ...batch,
    },
  });
  cleanups.push(() => service.stop());
  const account = await service.admin.createAccount({ email: 'ops@example.org', credits: 100 });
  return { service, store, logger, accountId: account.id, secret: account.webhookSecret };
}

describe('batch webhooks', () => {
  it('POSTs the completion event, signed the Standard Webhooks way (verified by standardwebhooks)', async () => {
    const hook = await startWebhookReceiver(() => 204);
    cleanups.push(hook.close);
    const { service, accountId, secret } = await setup({
      webhookSender: createNodeWebhookSender({ allowPrivateNetworks: true }),
    });
    const created = await service.submitBatch(
      { accountId },
      { emails: ['a@example.org', 'b@example.org'], callbackUrl: hook.url },
    );
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    expect(hook.hits).toHaveLength(1);
    const [hit] = hook.hits as [WebhookHit];
    const verified = new Webhook(secret).verify(hit.body, hit.headers as Record<string, string>);
    expect(verified).toMatchObject({
      event: 'batch.completed',
      id: created.id,
      status: 'completed',
      total_emails: 2,
      processed: 2,
      download_url: `https://api.example.com/v1/verify/${created.id}/results`,
    });
    expect(typeof (verified as { completed_at: string }).completed_at).toBe('string');

    // A rotated secret signs from then on; the old one no longer verifies.
    const { webhookSecret } = await service.admin.rotateWebhookSecret(accountId);
    expect(webhookSecret).toMatch(/^whsec_/);
    await service.submitBatch({ accountId }, { emails: ['c@example.org'], callbackUrl: hook.url });
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    const second = hook.hits[1] as WebhookHit;
    const headers = second.headers as Record<string, string>;
    expect(() => new Webhook(webhookSecret).verify(second.body, headers)).not.toThrow();
    expect(() => new Webhook(secret).verify(second.body, headers)).toThrow();
  });

  const SCHEDULE = [1_000, 2_000, 4_000];

  type Answer = (() => number | 'hang' | { redirect: string }) | null;
  /** Each fault, and the last_error (and last_status) its attempts leave in the status. */
  const FAULTS: readonly (readonly [string, Answer, RegExp, number | null])[] = [
    ['a 500', () => 500, /^HTTP 500$/, 500],
    ['a 301 (never followed)', () => ({ redirect: '/elsewhere' }), /^HTTP 301$/, 301],
    ['a hang (timeout)', () => 'hang', /^timeout: No answer within 200 ms\.$/, null],
    // In our words: Node's (connect ECONNREFUSED 127.0.0.1:port) go to the log only.
    ['a refused connection', null, /^connect: The connection was refused or reset\.$/, null],
  ];

  it.each(FAULTS)('retries %s on schedule with jitter, then gives up', async (...fault) => {
    const [, answer, lastError, lastStatus] = fault;
    const clock = createManualClock(Date.UTC(2026, 10, 1));
    let url: string;
    let hits: readonly WebhookHit[] = [];
    if (answer === null) url = `http://127.0.0.1:${await freePort()}/hook`;
    else {
      const hook = await startWebhookReceiver(answer);
      cleanups.push(hook.close);
      url = hook.url;
      hits = hook.hits;
    }
    const { service, store, logger, accountId } = await setup(
      {
        webhookSender: createNodeWebhookSender({ allowPrivateNetworks: true }),
        webhookRetryScheduleMs: SCHEDULE,
        webhookTimeoutMs: 200,
      },
      clock,
    );
    const caller = { accountId };
    const created = await service.submitBatch(caller, {
      emails: ['a@example.org'],
      callbackUrl: url,
    });
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();

    for (let attempt = 1; attempt <= SCHEDULE.length; attempt++) {
      const [message] = await store.jobWebhooks(created.id);
      expect(message).toMatchObject({ status: 'pending', attempts: attempt });
      // Visible in the status, and one warn line for each attempt so far.
      const { webhook } = await service.batchStatus(caller, created.id);
      expect(webhook).toMatchObject({
        status: 'pending',
        attempts: attempt,
        last_status: lastStatus,
        last_error: expect.stringMatching(lastError),
        next_attempt_at: new Date(message?.nextAttemptAt ?? 0).toISOString(),
      });
      expect(logger.events('webhook.retrying')).toHaveLength(attempt);
      const delay = SCHEDULE[attempt - 1] as number;
      const wait = (message?.nextAttemptAt ?? 0) - clock.now();
      expect(wait).toBeGreaterThanOrEqual(delay * 0.8);
      expect(wait).toBeLessThanOrEqual(delay * 1.2);
      clock.set(clock.now() + wait - 1);
      expect(await service.batchWork.deliverWebhooks()).toBe(0);
      clock.advance(1);
      expect(await service.batchWork.deliverWebhooks()).toBe(1);
    }
    const [message] = await store.jobWebhooks(created.id);
    expect(message).toMatchObject({ status: 'failed', attempts: SCHEDULE.length + 1 });
    expect((await service.batchStatus(caller, created.id)).webhook).toEqual({
      status: 'failed',
      attempts: SCHEDULE.length + 1,
      last_status: lastStatus,
      last_error: expect.stringMatching(lastError),
      next_attempt_at: null,
    });
    const lines = logger.lines.filter((line) => String(line.fields.event).startsWith('webhook.'));
    expect(lines.map((line) => [line.level, line.fields.event, line.fields.attempt])).toEqual([
      ...SCHEDULE.map((_, i) => ['warn', 'webhook.retrying', i + 1]),
      ['warn', 'webhook.failed', SCHEDULE.length + 1],
    ]);
    if (answer === null) {
      for (const line of lines) expect(line.fields.detail).toMatch(/ECONNREFUSED/);
    }
    if (answer !== null) {
      expect(hits).toHaveLength(SCHEDULE.length + 1);
      expect(hits.every((hit) => hit.path === '/hook')).toBe(true);
    }
  });

  it('stops at a 410', async () => {
    const hook = await startWebhookReceiver(() => 410);
    cleanups.push(hook.close);
    const { service, store, accountId } = await setup({
      webhookSender: createNodeWebhookSender({ allowPrivateNetworks: true }),
    });
    const created = await service.submitBatch(
      { accountId },
      { emails: ['a@example.org'], callbackUrl: hook.url },
    );
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    expect(await store.jobWebhooks(created.id)).toMatchObject([
      { status: 'failed', attempts: 1, lastError: 'HTTP 410' },
    ]);
    expect(hook.hits).toHaveLength(1);
  });
});

describe('the webhook sender SSRF guard', () => {
  const request = (url: string) => ({ url, headers: {}, body: '{}', timeoutMs: 2_000 });

  it.each([
    'http://127.0.0.1:9/hook',
    'http://10.0.0.1/hook',
    'http://[::ffff:127.0.0.1]:9/hook',
    'http://2130706433:9/hook',
    'http://0x7f.1:9/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://100.64.0.1/hook',
    'http://[::1]:9/hook',
    'http://[fd00::1]/hook',
  ])('refuses %s without connecting', async (url) => {
    const sender = createNodeWebhookSender();
    expect(await sender.send(request(url))).toMatchObject({
      kind: 'error',
      code: 'forbidden_address',
    });
  });

  it('refuses a name when any address it resolves to is private', async () => {
    const sender = createNodeWebhookSender({
      resolve: async (host) =>
        host === 'mixed.test' ? ['93.184.216.34', '10.1.2.3'] : ['192.168.1.1'],
    });
    expect(await sender.send(request('https://mixed.test/hook'))).toMatchObject({
      code: 'forbidden_address',
    });
    expect(await sender.send(request('https://internal.test/hook'))).toMatchObject({
      code: 'forbidden_address',
    });
  });

  it('gives up on a resolver that never answers by the attempt deadline', async () => {
    const sender = createNodeWebhookSender({ resolve: () => new Promise(() => {}) });
    expect(
      await sender.send({ ...request('https://silent.test/hook'), timeoutMs: 100 }),
    ).toMatchObject({ kind: 'error', code: 'dns' });
  });

  it('connects to the address it checked, keeping the name in Host', async () => {
    const hook = await startWebhookReceiver(() => 200);
    cleanups.push(hook.close);
    let resolutions = 0;
    const sender: WebhookSender = createNodeWebhookSender({
      allowPrivateNetworks: true,
      resolve: async () => (resolutions++ === 0 ? ['127.0.0.1'] : ['203.0.113.9']),
    });
    expect(await sender.send(request(`http://hooks.test:${hook.port}/hook`))).toEqual({
      kind: 'status',
      status: 200,
    });
    expect(resolutions).toBe(1);
    expect(hook.hits[0]?.host).toBe(`hooks.test:${hook.port}`);
  });

  it('fails a job webhook whose host resolves to a private address, without retrying', async () => {
    const { service, store, logger, accountId } = await setup({
      allowPrivateNetworks: false,
      webhookSender: createNodeWebhookSender({ resolve: async () => ['10.0.0.7'] }),
    });
    const created = await service.submitBatch(
      { accountId },
      { emails: ['a@example.org'], callbackUrl: 'https://hooks.example.net/hook' },
    );
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    expect(await store.jobWebhooks(created.id)).toMatchObject([{ status: 'failed', attempts: 1 }]);
    expect((await store.jobWebhooks(created.id))[0]?.lastError).toMatch(/^forbidden_address/);
    // Not silent: the status shows it, and the process that tried says so.
    expect((await service.batchStatus({ accountId }, created.id)).webhook).toEqual({
      status: 'failed',
      attempts: 1,
      last_status: null,
      last_error:
        'forbidden_address: hooks.example.net resolves to 10.0.0.7, which is not a public address.',
      next_attempt_at: null,
    });
    expect(logger.events('webhook.failed')).toMatchObject([
      {
        level: 'warn',
        fields: { job_id: created.id, attempt: 1, callback: 'https://hooks.example.net' },
      },
    ]);
  });
});

describe('what a job was decided under travels with it', () => {
  /** A runner that takes jobs and runs none: the process that submits is not the one that works. */
  const idleRunner: NonNullable<BatchOptions['runner']> = () => ({
    start: () => undefined,
    resume: async () => 0,
    stop: async () => undefined,
    idle: async () => undefined,
  });

  /** Two services on one store, as an API process and a worker on one Redis are. */
  function processes(api: BatchOptions, worker: BatchOptions) {
    const store = createMemoryStore();
    const engine = createEngine({ offline: true });
    const submitting = createService({ engine, store, batch: { ...api, runner: idleRunner } });
    const working = createService({ engine, store, batch: worker });
    cleanups.push(() => working.stop());
    return { store, submitting, working };
  }

  it('a worker configured otherwise sends the webhook by the policy and base URL the API kept', async () => {
    const hook = await startWebhookReceiver(() => 204);
    cleanups.push(hook.close);
    const { store, submitting, working } = processes(
      {
        baseUrl: 'https://api.example.com/mv',
        allowHttpCallbacks: true,
        allowPrivateNetworks: true,
      },
      // No base URL, https only, public addresses only, and a sender of its own that refuses
      // private ones: the worker's own settings, none of which the job was taken under.
      { baseUrl: 'https://worker.example.net/', webhookSender: createNodeWebhookSender() },
    );
    const account = await submitting.admin.createAccount({ email: 'a@example.org', credits: 9 });
    const caller = { accountId: account.id };
    const { id } = await submitting.submitBatch(caller, {
      emails: ['a@example.org'],
      callbackUrl: hook.url,
    });
    expect(await store.getJob(account.id, id)).toMatchObject({
      baseUrl: 'https://api.example.com/mv/',
      callbackPolicy: { allowHttp: true, allowPrivateNetworks: true },
    });
    await working.start(); // resumes the job, finishes it, sends its webhook
    await working.batchWork.idle();
    await working.batchWork.deliverWebhooks();
    expect(await store.jobWebhooks(id)).toMatchObject([{ status: 'delivered', attempts: 1 }]);
    const event = JSON.parse((hook.hits[0] as WebhookHit).body) as { download_url: string };
    const url = `https://api.example.com/mv/v1/verify/${id}/results`;
    expect(event.download_url).toBe(url);
    expect((await working.batchStatus(caller, id)).download_url).toBe(url);
    expect((await submitting.batchStatus(caller, id)).download_url).toBe(url);
  });

  it('a permissive worker keeps to the strict policy a job was taken under', async () => {
    const hook = await startWebhookReceiver(() => 204);
    cleanups.push(hook.close);
    // The callback's name resolves to loopback only when sent: submission took it as public.
    const toLoopback = { resolve: async () => ['127.0.0.1'] };
    const { store, submitting, working } = processes(
      { allowHttpCallbacks: true },
      {
        allowPrivateNetworks: true,
        webhookSender: createNodeWebhookSender({ ...toLoopback, allowPrivateNetworks: true }),
      },
    );
    const account = await submitting.admin.createAccount({ email: 'a@example.org', credits: 9 });
    const { id } = await submitting.submitBatch(
      { accountId: account.id },
      { emails: ['a@example.org'], callbackUrl: `http://hooks.test:${hook.port}/hook` },
    );
    await working.start();
    await working.batchWork.idle();
    await working.batchWork.deliverWebhooks();
    const [message] = await store.jobWebhooks(id);
    expect(message).toMatchObject({ status: 'failed', attempts: 1 });
    expect(message?.lastError).toMatch(/^forbidden_address/);
    expect(hook.hits).toHaveLength(0);
  });

  it('a job stored before decisions were kept takes those of the process that reads it', async () => {
    const hook = await startWebhookReceiver(() => 204);
    cleanups.push(hook.close);
    const { service, store, accountId } = await setup({
      baseUrl: 'https://reader.example.com/',
      webhookSender: createNodeWebhookSender(),
    });
    await store.createJob(
      {
        id: 'batch_old',
        accountId,
        method: 'quick',
        status: 'processing',
        totalEmails: 1,
        billable: 1,
        cost: 1,
        reservation: null,
        holds: 0,
        callbackUrl: hook.url,
        processed: 0,
        valid: 0,
        invalid: 0,
        risky: 0,
        createdAt: 1,
        completedAt: null,
        failureReason: null,
        purgeAt: null,
      },
      [{ email: 'deliverable@example.com', billable: true, duplicateOf: null, result: null }],
      { requests: [] },
      1,
    );
    await service.start();
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    const url = 'https://reader.example.com/v1/verify/batch_old/results';
    expect((await service.batchStatus({ accountId }, 'batch_old')).download_url).toBe(url);
    // This process allows private networks (setup's default): so does the old job.
    expect(await store.jobWebhooks('batch_old')).toMatchObject([{ status: 'delivered' }]);
    expect(JSON.parse((hook.hits[0] as WebhookHit).body)).toMatchObject({ download_url: url });
  });

  it('a service with no base URL gives the path, in the status and the webhook alike', async () => {
    const hook = await startWebhookReceiver(() => 204);
    cleanups.push(hook.close);
    const { service, accountId } = await setup({
      baseUrl: undefined as never,
      webhookSender: createNodeWebhookSender({ allowPrivateNetworks: true }),
    });
    const { id } = await service.submitBatch(
      { accountId },
      { emails: ['a@example.org'], callbackUrl: hook.url },
    );
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    const path = `/v1/verify/${id}/results`;
    expect((await service.batchStatus({ accountId }, id)).download_url).toBe(path);
    expect(JSON.parse((hook.hits[0] as WebhookHit).body)).toMatchObject({ download_url: path });
  });
});
