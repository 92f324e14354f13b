import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisStore } from '../../src/redis.js';
import { createEngine } from '../../src/compose/engine.js';
import type { Store } from '../../src/ports/store.js';
import { createService } from '../../src/compose/service.js';
import { startCli, type CliProcess as Process } from '../helpers/cli.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';
import { redisAvailable, startRedisServer, type RedisTestServer } from '../helpers/redis-server.js';
import { startScriptedServer, type ScriptedServer } from '../helpers/smtp-server.js';
import { pause } from '../helpers/waiting.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Issue 15 end to end: two `mailverdict serve --redis` processes and three `mailverdict worker`
 * processes on one redis-server, as an operator runs them, with real signals: rate limits
 * across API processes, the per-MX limit across workers, and a 50,000-address job that
 * survives two SIGKILLed workers and a Redis restart.
 */
const cli = startCli;
const run = redisAvailable() ? describe : describe.skip;

run('two API processes and three workers on one Redis', () => {
  const BIG_DOMAINS = 2_000;
  const SIZE = 50_000;
  const EMAILS = Array.from({ length: SIZE }, (_, i) => `user${i}@big${i % BIG_DOMAINS}.com`);
  const MX_DOMAINS = 60;
  const PER_HOST = 2;

  let redis: RedisTestServer;
  let dns: TestDnsServer;
  let smtp: ScriptedServer;
  let hooks: WebhookReceiver;
  const processes: Process[] = [];
  let apis: string[] = [];
  let workerUrl: string;
  let key: string;
  let store: Store;

  const common = (): string[] => [
    '--redis',
    redis.url,
    '--dns-server',
    dns.address,
    '--no-dns-canary',
    '--allow-private-networks',
    '--helo',
    'probe.example.org',
    '--mail-from',
    'probe@example.org',
    '--smtp-port',
    String(smtp.port),
  ];
  const startWorker = async (extra: string[] = []) => {
    const worker = cli([
      'worker',
      ...common(),
      '--lock-ms',
      '2000',
      '--smtp-per-host',
      String(PER_HOST),
      ...extra,
    ]);
    processes.push(worker);
    await worker.waitFor(/Worker on redis/);
    return worker;
  };
  const startApi = async (extra: string[]) => {
    const api = cli(['serve', ...common(), '--port', '0', '--credits', '200000', ...extra]);
    processes.push(api);
    const [, url] = await api.waitFor(/Listening on (http:\/\/\S+) /);
    return { api, url: url as string };
  };

  beforeAll(async () => {
    redis = await startRedisServer({ durable: true });
    const zone: Parameters<typeof startDnsServer>[0] = {
      'mx.shared-host.com': { a: ['127.0.0.1'] },
    };
    for (let d = 0; d < MX_DOMAINS; d++) {
      zone[`mx${d}.com`] = { mx: [{ exchange: 'mx.shared-host.com', preference: 10 }] };
    }
    for (let d = 0; d < BIG_DOMAINS; d += 2) {
      zone[`big${d}.com`] = { mx: [{ exchange: `mx.big${d}.com`, preference: 10 }] };
    }
    dns = await startDnsServer(zone);
    // RCPT answers take 30 ms, so sessions from different workers overlap unless limited.
    smtp = await startScriptedServer({ otherwise: 'accept', rcptDelayMs: 30 });
    hooks = await startWebhookReceiver();

    // The first API process creates the account and prints its key; the second finds it.
    const first = await startApi(['--chunk-size', '20']);
    [, key] = (await first.api.waitFor(/^(mv_sk_\S+)$/m)) as [string, string];
    const second = await startApi([]);
    apis = [first.url, second.url];
    await startWorker();
    await startWorker();
    // The third also answers /health, /ready and /metrics (no API).
    const watched = await startWorker(['--port', '0']);
    [, workerUrl] = (await watched.waitFor(/health and metrics on (http:\/\/\S+)\./)) as [
      string,
      string,
    ];
    store = createRedisStore(redis.url);
  }, 120_000);

  afterAll(async () => {
    for (const { child } of processes) if (child.exitCode === null) child.kill('SIGKILL');
    await store?.close();
    await hooks?.close();
    await smtp?.close();
    await dns?.close();
    await redis?.close();
  });

  const authorized = { authorization: () => `Bearer ${key}` };
  async function submit(api: string, emails: readonly string[], method: string) {
    const response = await fetch(`${api}/v1/verify`, {
      method: 'POST',
      headers: { authorization: authorized.authorization(), 'content-type': 'application/json' },
      body: JSON.stringify({
        emails,
        method,
        callback_url: hooks.url,
      }),
    });
    expect(response.status).toBe(202);
    return ((await response.json()) as { id: string }).id;
  }
  async function status(api: string, id: string) {
    const response = await fetch(`${api}/v1/verify/${id}`, {
      headers: { authorization: authorized.authorization() },
    });
    return (await response.json()) as { status: string; processed: number; error?: string };
  }

  it('admits exactly the plan limit of concurrent requests on one key across both API processes', async () => {
    // A free-plan account (10 a minute), made as an admin tool would, on the same Redis.
    const admin = createService({ engine: createEngine({ offline: true }), store });
    const account = await admin.admin.createAccount({
      email: 'free@example.org',
      plan: 'free',
      credits: 100,
    });
    const { secret } = await admin.admin.createKey(account.id);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        fetch(`${apis[i % 2]}/v1/verify?email=user${i}@example.org&method=quick`, {
          headers: { authorization: `Bearer ${secret}` },
        }),
      ),
    );
    const statuses = answers.map((response) => response.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30);
    const refused = answers.find((response) => response.status === 429);
    expect(Number(refused?.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused?.json()).toMatchObject({ error: 'rate_limit_exceeded' });
  });

  it('holds the per-MX-host session limit across the three workers', async () => {
    const emails = Array.from(
      { length: MX_DOMAINS * 2 },
      (_, i) => `person${i}@mx${i % MX_DOMAINS}.com`,
    );
    // Chunks of 20 (the first API process's setting): six chunks over three workers.
    const id = await submit(apis[0] as string, emails, 'smtp');
    for (let i = 0; i < 600 && (await status(apis[1] as string, id)).status === 'processing'; i++) {
      await pause(100);
    }
    expect(await status(apis[1] as string, id)).toMatchObject({
      status: 'completed',
      processed: emails.length,
    });
    // Every address (and each domain's catch-all probe) was asked, never over PER_HOST at once.
    expect(new Set(smtp.rcpts).size).toBeGreaterThanOrEqual(emails.length);
    expect(smtp.maxConcurrent()).toBeLessThanOrEqual(PER_HOST);
  }, 90_000);

  it('finishes a 50,000-address job once through two SIGKILLed workers and a Redis restart', async () => {
    const [first, second] = apis as [string, string];
    const id = await submit(second, EMAILS, 'quick');
    const disruptions: string[] = [];
    const when = async (fraction: number) => {
      for (;;) {
        const now = await status(first, id);
        if (now.status !== 'processing') return false;
        if (now.processed >= SIZE * fraction) return true;
        await pause(50);
      }
    };

    if (await when(0.1)) {
      processes[2]?.child.kill('SIGKILL'); // the first worker
      disruptions.push('worker killed');
      await startWorker();
    }
    if (await when(0.35)) {
      // Redis away for a second: the API answers 500 internal_error, never a charge without
      // a record; the workers wait and go on.
      const restart = redis.restart({ downMs: 1_000 });
      await pause(200);
      const during = await fetch(`${first}/v1/verify?email=during@example.org&method=quick`, {
        headers: { authorization: authorized.authorization() },
      });
      expect(during.status).toBe(500);
      // What kind of fault, in our words: ioredis's (its maxRetriesPerRequest) go to the log.
      const answered = (await during.json()) as { error: string; message: string };
      expect(answered).toMatchObject({
        error: 'internal_error',
        message: expect.stringMatching(/data store could not be reached/),
      });
      expect(answered.message).not.toMatch(/maxRetriesPerRequest|ioredis|Redis/);
      await restart;
      disruptions.push('redis restarted');
    }
    if (await when(0.6)) {
      processes[3]?.child.kill('SIGKILL'); // the second worker
      disruptions.push('worker killed');
      await startWorker();
    }
    expect(disruptions).toEqual(['worker killed', 'redis restarted', 'worker killed']);

    let final = await status(first, id);
    for (let i = 0; i < 1_800 && final.status === 'processing'; i++) {
      await pause(100);
      final = await status(first, id);
    }
    expect(final).toMatchObject({ status: 'completed', processed: SIZE });

    // Every address has one result, in input order.
    const download = await fetch(`${second}/v1/verify/${id}/results?format=ndjson`, {
      headers: { authorization: authorized.authorization() },
    });
    const lines = (await download.text()).trim().split('\n');
    expect(lines).toHaveLength(SIZE);
    lines.forEach((line, i) => {
      expect((JSON.parse(line) as { email: string }).email).toBe(EMAILS[i]);
    });

    // One settle per address, no reference twice, nothing left held.
    const accountId = (await store.listAccounts())[0]?.id as string;
    const settles = new Set<string>();
    let entries = 0;
    for (let after = 0; ;) {
      const page = await store.ledgerEntries(accountId, { afterSeq: after, limit: 5_000 });
      if (page.length === 0) break;
      for (const entry of page) {
        if (entry.kind === 'settle' && entry.ref.includes(id)) {
          expect(settles.has(entry.ref)).toBe(false);
          settles.add(entry.ref);
        }
      }
      entries += page.length;
      after = page[page.length - 1]?.seq ?? after;
    }
    expect(entries).toBeGreaterThan(SIZE);
    expect(settles.size).toBe(SIZE);
    expect((await store.listHolds(accountId)).filter((hold) => hold.ref.includes(id))).toEqual([]);

    // The webhook arrives once (every process delivers from the one outbox).
    await pause(3_000);
    const ours = hooks.hits.filter(({ body }) => body.includes(id));
    expect(ours).toHaveLength(1);
    expect(JSON.parse(ours[0]?.body ?? '{}')).toMatchObject({
      event: 'batch.completed',
      processed: SIZE,
    });
  }, 300_000);

  it('a worker serves health, readiness and metrics; SIGTERM stops workers and APIs cleanly', async () => {
    expect(await (await fetch(`${workerUrl}/health`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${workerUrl}/ready`)).json()).toMatchObject({ status: 'ready' });
    const metrics = await (await fetch(`${workerUrl}/metrics`)).text();
    // It took its share of the chunks: its own verdicts are counted.
    const verified = [...metrics.matchAll(/^mailverdict_verifications_total\{[^}]*\} (\d+)$/gm)]
      .map((match) => Number(match[1]))
      .reduce((sum, count) => sum + count, 0);
    expect(verified).toBeGreaterThan(0);
    expect((await fetch(`${workerUrl}/v1/account`)).status).toBe(404);

    const running = processes.filter(({ child }) => child.exitCode === null && !child.killed);
    expect(running.length).toBeGreaterThanOrEqual(5);
    const exits = running.map(
      ({ child }) => new Promise<number | null>((resolve) => child.once('exit', resolve)),
    );
    for (const { child } of running) child.kill('SIGTERM');
    expect(await Promise.all(exits)).toEqual(running.map(() => 0));
  }, 60_000);
});

/**
 * Issue 23: what the processes of a job must agree on is decided by the API process that takes
 * it and kept with it. Started as the README shows them: the worker has no --base-url and no
 * callback flags, yet builds the API's download_url and delivers a callback only the API
 * process's --allow-private-networks admits.
 */
run('an API process and a worker agree on what the job was decided under', () => {
  let redis: RedisTestServer;
  let hooks: WebhookReceiver;
  const started: Process[] = [];

  beforeAll(async () => {
    redis = await startRedisServer();
    hooks = await startWebhookReceiver();
  }, 60_000);

  afterAll(async () => {
    for (const child of started) await child.stop('SIGKILL');
    await hooks?.close();
    await redis?.close();
  });

  it('the worker builds the API process’s download_url and applies its callback policy', async () => {
    // The API process takes the job and stops before any worker runs: only the worker, which
    // has neither --base-url nor --allow-private-networks, can finish it and send its webhook
    // (to a loopback receiver). --offline: no DNS question leaves the machine.
    const api = cli([
      'serve',
      '--redis',
      redis.url,
      '--port',
      '0',
      '--offline',
      '--allow-private-networks',
    ]);
    started.push(api);
    const [, url] = (await api.waitFor(/Listening on (http:\/\/\S+) /)) as [string, string];
    const [, key] = (await api.waitFor(/^(mv_sk_\S+)$/m)) as [string, string];
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const callback = hooks.url;
    const submitted = await fetch(`${url}/v1/verify`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ emails: ['a@example.org', 'b@example.net'], callback_url: callback }),
    });
    expect(submitted.status, await submitted.clone().text()).toBe(202);
    const { id } = (await submitted.json()) as { id: string };
    expect(await api.stop()).toBe(0);

    const worker = cli(['worker', '--redis', redis.url, '--offline']);
    started.push(worker);
    await worker.waitFor(/Worker on redis/);
    for (let i = 0; i < 600 && hooks.hits.length === 0; i++) await pause(50);
    expect(hooks.hits, worker.output()).toHaveLength(1);
    const event = JSON.parse(hooks.hits[0]?.body as string) as { id: string; download_url: string };
    expect(event).toMatchObject({ id, download_url: `${url}/v1/verify/${id}/results` });

    // The API process again, on its port, without the flag: the job reads as it was kept,
    // its download_url fetches the results, and a new loopback callback is refused by this
    // process's own policy.
    const again = cli(['serve', '--redis', redis.url, '--port', new URL(url).port, '--offline']);
    started.push(again);
    await again.waitFor(/Listening on /);
    const status = (await (await fetch(`${url}/v1/verify/${id}`, { headers })).json()) as {
      status: string;
      download_url: string;
    };
    expect(status).toMatchObject({ status: 'completed', download_url: event.download_url });
    const results = await fetch(event.download_url, { headers });
    expect(results.status).toBe(200);
    expect(((await results.json()) as { results: unknown[] }).results).toHaveLength(2);
    const refused = await fetch(`${url}/v1/verify`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ emails: ['c@example.org'], callback_url: callback }),
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ field: 'callback_url' });
  }, 120_000);
});
