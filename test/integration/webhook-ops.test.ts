import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli, type CliProcess } from '../helpers/cli.js';
import { jsonLines } from '../helpers/logger.js';
import { redisAvailable, startRedisServer, type RedisTestServer } from '../helpers/redis-server.js';
import { pause } from '../helpers/waiting.js';
import { startWebhookReceiver, type WebhookHit } from '../helpers/webhook-receiver.js';

/**
 * Webhook deliveries as an operator sees them, with `serve` (and at scale, `worker`) spawned
 * as the README starts them and a receiver on loopback: the status shows each delivery,
 * every attempt is one JSON line on the stderr of the process that made it, a delivery can be
 * asked for again once the receiver is fixed, and the CLI gives the secret to verify with.
 */
/** A receiver on loopback answering each POST with the next status of `answers` (then 204). */
const receiver = (answers: number[]) => startWebhookReceiver(() => answers.shift() ?? 204);

let dir: string;
const running: CliProcess[] = [];
const closing: (() => Promise<void>)[] = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mailverdict-webhooks-'));
});
afterEach(async () => {
  for (const process of running.splice(0)) await process.stop('SIGKILL');
  for (const close of closing.splice(0)) await close();
});

function start(args: string[]): CliProcess {
  const child = startCli(args);
  running.push(child);
  return child;
}

/**
 * `serve` on `store` taking loopback callbacks, as a test's receiver is one: its address and
 * the key its first start printed.
 */
async function startServe(store: string[]) {
  const serve = start(['serve', ...store, '--port', '0', '--offline', '--allow-private-networks']);
  const [, url] = (await serve.waitFor(/Listening on (http:\/\/\S+) /)) as [string, string];
  const [, key] = (await serve.waitFor(/^(mv_sk_\S+)$/m)) as [string, string];
  return { serve, url, key };
}

interface WebhookState {
  status: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
}

/** The API as a client calls it with the key the first start printed. */
function api(url: string, key: string) {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  return {
    async submit(callbackUrl: string): Promise<string> {
      const response = await fetch(`${url}/v1/verify`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          emails: ['a@example.org'],
          method: 'quick',
          callback_url: callbackUrl,
        }),
      });
      expect(response.status).toBe(202);
      return ((await response.json()) as { id: string }).id;
    },
    async webhook(id: string): Promise<WebhookState> {
      const response = await fetch(`${url}/v1/verify/${id}`, { headers });
      return ((await response.json()) as { webhook: WebhookState }).webhook;
    },
    /** Polls the status until `done` says so (30 s at most). */
    async until(id: string, done: (webhook: WebhookState) => boolean): Promise<WebhookState> {
      for (let i = 0; i < 300; i++) {
        const webhook = await this.webhook(id);
        if (done(webhook)) return webhook;
        await pause(100);
      }
      throw new Error(
        `webhook of ${id} never got there: ${JSON.stringify(await this.webhook(id))}`,
      );
    },
    redeliver: (id: string) => fetch(`${url}/v1/verify/${id}/webhook`, { method: 'POST', headers }),
  };
}

/** The webhook lines of the processes' stderr, by time (one process's in the order written). */
function webhookLines(processes: readonly CliProcess[]) {
  return processes
    .flatMap((process) => jsonLines(process.output()))
    .filter((line) => String(line.event).startsWith('webhook.'))
    .sort((a, b) => String(a.time).localeCompare(String(b.time)));
}

/**
 * The scenario, on whatever runs the API and the work: a receiver that answers 500, then 410
 * (gone: no more attempts), shows the delivery failed with its last error; each attempt is one
 * warn line; the receiver fixed, POST .../webhook delivers it.
 */
async function failThenRedeliver(url: string, key: string, processes: () => CliProcess[]) {
  const hooks = await receiver([500, 410]);
  closing.push(hooks.close);
  const client = api(url, key);
  const id = await client.submit(hooks.url);

  // The first attempt as the job finishes; its retry ~5 s later (the schedule's first delay).
  const failed = await client.until(id, (webhook) => webhook.status === 'failed');
  expect(failed).toEqual({
    status: 'failed',
    attempts: 2,
    last_status: 410,
    last_error: 'HTTP 410',
    next_attempt_at: null,
  });
  expect(hooks.hits).toHaveLength(2);
  const attempts = webhookLines(processes()).filter((line) => line.job_id === id);
  expect(attempts).toMatchObject([
    { level: 'warn', event: 'webhook.retrying', attempt: 1, status: 500, error: 'HTTP 500' },
    { level: 'warn', event: 'webhook.failed', attempt: 2, status: 410, next_attempt_at: null },
  ]);
  expect(typeof attempts[0]?.next_attempt_at).toBe('string');

  // The receiver is fixed (it answers 204 from now on): the delivery is asked for again.
  const queued = await client.redeliver(id);
  expect(queued.status).toBe(202);
  expect(((await queued.json()) as { webhook: WebhookState }).webhook).toMatchObject({
    status: 'pending',
    attempts: 0,
  });
  const delivered = await client.until(id, (webhook) => webhook.status === 'delivered');
  expect(delivered).toEqual({
    status: 'delivered',
    attempts: 1,
    last_status: 204,
    last_error: null,
    next_attempt_at: null,
  });
  expect(hooks.hits).toHaveLength(3);
  // The same event under the same webhook-id, as every attempt of it.
  const ids = new Set(hooks.hits.map((d) => d.headers['webhook-id']));
  expect(ids.size).toBe(1);
  const lines = webhookLines(processes()).filter((line) => line.job_id === id);
  expect(lines.map((line) => line.event)).toEqual([
    'webhook.retrying',
    'webhook.failed',
    'webhook.queued',
    'webhook.delivered',
  ]);
  return { id, hooks };
}

describe('webhook deliveries, serve on SQLite', () => {
  it('a failing receiver shows failed with its last error, a line per attempt; POST .../webhook delivers once it is up', async () => {
    const db = join(dir, 'sqlite.db');
    const { serve, url, key } = await startServe(['--db', db]);
    const { id } = await failThenRedeliver(url, key, () => [serve]);

    // The operator's view of the same: the CLI on the file the server runs on.
    const listed = await runCli(['webhooks', 'list', '--db', db, '--json']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout.trim().split('\n')[0] ?? '{}')).toMatchObject({
      job_id: id,
      status: 'delivered',
      attempts: 1,
      last_status: 204,
    });
    const failedOnly = await runCli(['webhooks', 'list', '--db', db, '--failed', '--json']);
    expect([failedOnly.code, failedOnly.stdout]).toEqual([0, '']);
    expect(await serve.stop()).toBe(0);
  });

  it('webhooks secret prints the secret standardwebhooks verifies a delivery with; rotate replaces it', async () => {
    const db = join(dir, 'secret.db');
    const hooks = await receiver([]);
    closing.push(hooks.close);
    const { serve, url, key } = await startServe(['--db', db]);
    const client = api(url, key);

    const secret = await runCli(['webhooks', 'secret', '--db', db]);
    expect(secret.code).toBe(0);
    expect(secret.stdout).toMatch(/^whsec_[A-Za-z0-9+/]+=*\n$/);
    const first = secret.stdout.trim();
    await client.until(await client.submit(hooks.url), (webhook) => webhook.status === 'delivered');
    const [delivery] = hooks.hits as [WebhookHit];
    const headers = delivery.headers as Record<string, string>;
    expect(new Webhook(first).verify(delivery.body, headers)).toMatchObject({
      event: 'batch.completed',
    });

    const rotated = await runCli(['webhooks', 'rotate', '--db', db]);
    expect(rotated.code).toBe(0);
    const second = rotated.stdout.trim();
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(first);
    expect((await runCli(['webhooks', 'secret', '--db', db])).stdout.trim()).toBe(second);
    await client.until(await client.submit(hooks.url), (webhook) => webhook.status === 'delivered');
    const after = hooks.hits[1] as WebhookHit;
    const afterHeaders = after.headers as Record<string, string>;
    expect(() => new Webhook(second).verify(after.body, afterHeaders)).not.toThrow();
    expect(() => new Webhook(first).verify(after.body, afterHeaders)).toThrow();
    expect(await serve.stop()).toBe(0);
  });

  it('webhooks redeliver queues the delivery again from the CLI; the running serve sends it', async () => {
    const db = join(dir, 'redeliver.db');
    const hooks = await receiver([410]);
    closing.push(hooks.close);
    const { serve, url, key } = await startServe(['--db', db]);
    const client = api(url, key);
    const id = await client.submit(hooks.url);
    await client.until(id, (webhook) => webhook.status === 'failed');
    const failed = await runCli(['webhooks', 'list', '--db', db, '--failed']);
    expect(failed.stdout).toMatch(new RegExp(`^${id}\\s+failed\\s+1\\s+410\\s`, 'm'));

    const redelivered = await runCli(['webhooks', 'redeliver', id, '--db', db]);
    expect(redelivered.code).toBe(0);
    expect(JSON.parse(redelivered.stdout)).toMatchObject({ id, webhook: { status: 'pending' } });
    // Sent by serve's own round (every 5 s), not by the CLI.
    await client.until(id, (webhook) => webhook.status === 'delivered');
    expect(hooks.hits).toHaveLength(2);

    const unknown = await runCli(['webhooks', 'redeliver', 'batch_nope', '--db', db]);
    expect([unknown.code, unknown.stderr]).toEqual([2, 'mailverdict: No batch batch_nope.\n']);
    expect(await serve.stop()).toBe(0);
  });
});

const scale = redisAvailable() ? describe : describe.skip;

scale('webhook deliveries at scale: serve and a worker on Redis', () => {
  let redis: RedisTestServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('the same, wherever the worker that finishes the job runs, without --allow-private-networks', async () => {
    // As the README starts them: the API takes loopback callbacks; the worker has no such flag
    // and delivers under the policy kept with the job.
    const { serve, url, key } = await startServe(['--redis', redis.url]);
    const worker = start(['worker', '--redis', redis.url, '--offline']);
    await worker.waitFor(/Worker on redis/);
    const { id } = await failThenRedeliver(url, key, () => [serve, worker]);

    // The job's life, told by the processes that lived it.
    const lines = [serve, worker].flatMap((process) => jsonLines(process.output()));
    expect(lines.filter((line) => line.job_id === id).map((line) => line.event)).toEqual(
      expect.arrayContaining(['job.submitted', 'job.completed']),
    );
    const listed = await runCli(['webhooks', 'list', '--redis', redis.url, '--json']);
    expect(JSON.parse(listed.stdout.trim().split('\n')[0] ?? '{}')).toMatchObject({
      job_id: id,
      status: 'delivered',
    });
    expect(await worker.stop()).toBe(0);
    expect(await serve.stop()).toBe(0);
  });
});
