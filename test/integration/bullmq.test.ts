import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bullmqBatchRunner, chunkByDomain } from '../../src/bullmq.js';
import { createEngine } from '../../src/compose/engine.js';
import type { Observer } from '../../src/ports/observer.js';
import type { Store } from '../../src/ports/store.js';
import { createService } from '../../src/compose/service.js';
import { type Service } from '../../src/service/service.js';
import { createRedisStore } from '../../src/redis.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { createMemoryWebhookSender } from '../../src/testing.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';
import { redisAvailable, startRedisServer, type RedisTestServer } from '../helpers/redis-server.js';

describe('chunkByDomain', () => {
  const item = (position: number, domain: string) => ({
    position,
    email: `u${position}@${domain}`,
  });

  it('keeps a domain together, packs small domains, splits a large one', () => {
    const items = [
      item(0, 'a.org'),
      item(1, 'b.org'),
      item(2, 'A.ORG'),
      item(3, 'c.org'),
      item(4, 'b.org'),
      item(5, 'big.org'),
      item(6, 'big.org'),
      item(7, 'big.org'),
      item(8, 'big.org'),
      item(9, 'big.org'),
    ];
    expect(chunkByDomain(items, 4)).toEqual([
      [0, 1, 2, 4], // a.org (2) and b.org (2)
      [5, 6, 7, 8], // big.org's first 4
      [3, 9], // c.org, then what is left of big.org
    ]);
    // Every position exactly once, whatever the size.
    for (const size of [1, 2, 3, 7, 100]) {
      expect(
        chunkByDomain(items, size)
          .flat()
          .sort((a, b) => a - b),
      ).toEqual(items.map((i) => i.position));
    }
    expect(() => chunkByDomain(items, 0)).toThrow(RangeError);
  });
});

const run = redisAvailable() ? describe : describe.skip;

run('batch jobs on BullMQ: chunks across worker services sharing one store', () => {
  const DOMAINS = 40;
  const SIZE = 2_000;
  // Every 10th address repeats the one before: free duplicates, verified once.
  const EMAILS = Array.from({ length: SIZE }, (_, i) =>
    i % 10 === 9 ? `user${i - 1}@mq${(i - 1) % DOMAINS}.com` : `user${i}@mq${i % DOMAINS}.com`,
  );
  const BILLABLE = SIZE - SIZE / 10;
  const IP_DOMAINS = 10;

  let redis: RedisTestServer;
  let dns: TestDnsServer;
  let store: Store;
  const services: Service[] = [];
  let queueName: string;
  let queues = 0;

  beforeAll(async () => {
    redis = await startRedisServer();
    const zone: Parameters<typeof startDnsServer>[0] = {};
    for (let d = 0; d < DOMAINS; d += 2) {
      zone[`mq${d}.com`] = { mx: [{ exchange: `mx.mq${d}.com`, preference: 10 }] };
    }
    // Domains whose mail hosts have addresses, for IP filters.
    for (let d = 0; d < IP_DOMAINS; d++) {
      zone[`ip${d}.com`] = { mx: [{ exchange: `mx.ip${d}.com`, preference: 10 }] };
      zone[`mx.ip${d}.com`] = { a: [`192.0.2.${d}`] };
    }
    // 5 ms a DNS answer: chunks take long enough for a worker to be stopped inside one.
    dns = await startDnsServer(zone, { rcode: 'NXDOMAIN' }, 5);
  });
  afterAll(async () => {
    await dns?.close();
    await redis?.close();
  });
  afterEach(async () => {
    for (const service of services.splice(0)) await service.stop();
    await store?.close();
  });

  /** A service on the shared store; `work` makes it a worker. Counts the verdicts it reaches. */
  function member(work: boolean, webhooks = createMemoryWebhookSender()) {
    const verdicts = { count: 0 };
    const observer: Observer = { onVerdict: () => void verdicts.count++ };
    const service = createService({
      engine: createEngine({
        dnsOptions: { servers: [dns.address], timeoutMs: 5_000, tries: 2 },
        dnsCanary: false,
        observer,
      }),
      store,
      batch: {
        webhookSender: webhooks,
        flushSize: 20,
        runner: bullmqBatchRunner({
          connection: redis.url,
          queueName,
          work,
          chunkSize: 100,
          lockMs: 2_000,
        }),
      },
    });
    services.push(service);
    return { service, verdicts };
  }

  async function completion(service: Service, accountId: string, jobId: string) {
    for (let i = 0; i < 600; i++) {
      const status = await service.batchStatus({ accountId }, jobId);
      if (status.status !== 'processing') return status;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('the job did not finish in 30 s');
  }

  it('verifies every address once, across workers, and finishes once with one webhook', async () => {
    store = createMemoryStore();
    queueName = `mq-${queues++}`;
    const webhooks = createMemoryWebhookSender();
    const api = member(false, webhooks);
    const workers = [member(true, webhooks), member(true, webhooks)] as const;
    for (const { service } of [api, ...workers]) await service.start();
    const account = await api.service.admin.createAccount({
      email: 'ops@example.org',
      credits: 10_000,
    });
    const created = await api.service.submitBatch(
      { accountId: account.id },
      { emails: EMAILS, method: 'quick', callbackUrl: 'https://hooks.example.com/done' },
    );
    const status = await completion(api.service, account.id, created.id);
    expect(status).toMatchObject({ status: 'completed', processed: SIZE });

    // The API process verified nothing; the workers verified each billable address once.
    expect(api.verdicts.count).toBe(0);
    expect(workers.map((w) => w.verdicts.count).every((count) => count > 0)).toBe(true);
    expect(workers[0].verdicts.count + workers[1].verdicts.count).toBe(BILLABLE);
    expect(await store.balance(account.id)).toMatchObject({ used: BILLABLE, reserved: 0 });

    let results = 0;
    let after = -1;
    for (;;) {
      const page = await store.jobResults(created.id, after, 1_000);
      if (page.length === 0) break;
      for (const row of page) expect(row.position).toBe(++after);
      results += page.length;
    }
    expect(results).toBe(SIZE);

    for (const { service } of [api, ...workers]) await service.batchWork.deliverWebhooks();
    expect(webhooks.sent).toHaveLength(1);
    expect(JSON.parse(webhooks.sent[0]?.body ?? '')).toMatchObject({
      event: 'batch.completed',
      processed: SIZE,
    });
  }, 60_000);

  it("matches IP filters against the MX hosts' addresses on the Redis store: in a job across workers, and in a single verify", async () => {
    store = createRedisStore(redis.url);
    queueName = `mq-${queues++}`;
    const api = member(false);
    const workers = [member(true), member(true)] as const;
    for (const { service } of [api, ...workers]) await service.start();
    const account = await api.service.admin.createAccount({
      email: 'ops@example.org',
      credits: 1_000,
    });
    const caller = { accountId: account.id };
    // The mail hosts of ip0.com ... ip3.com, and an allow more specific for ip2.com's.
    await api.service.createFilter(caller, {
      value: '192.0.2.0/30',
      type: 'ip_address',
      action: 'block',
    });
    await api.service.createFilter(caller, {
      value: '192.0.2.2',
      type: 'ip_address',
      action: 'allow',
    });
    const emails = Array.from(
      { length: IP_DOMAINS * 30 },
      (_, i) => `u${i}@ip${i % IP_DOMAINS}.com`,
    );
    const created = await api.service.submitBatch(caller, { emails, method: 'quick' });
    const status = await completion(api.service, account.id, created.id);
    expect(status).toMatchObject({ status: 'completed', processed: emails.length });
    const reasons = new Map<string, Set<string>>();
    for (const row of await store.jobResults(created.id, -1, emails.length)) {
      const record = JSON.parse(row.record) as { domain: string; reason: string };
      reasons.set(record.domain, (reasons.get(record.domain) ?? new Set()).add(record.reason));
    }
    expect(Object.fromEntries([...reasons].map(([domain, set]) => [domain, [...set]]))).toEqual({
      'ip0.com': ['blocked_by_filter'],
      'ip1.com': ['blocked_by_filter'],
      'ip2.com': ['allowed_by_filter'],
      'ip3.com': ['blocked_by_filter'],
      ...Object.fromEntries(
        Array.from({ length: IP_DOMAINS - 4 }, (_, d) => [`ip${d + 4}.com`, ['accepted_email']]),
      ),
    });
    // The matches were free: only the other six domains' addresses are charged.
    expect(await store.balance(account.id)).toMatchObject({ used: 6 * 30, reserved: 0 });

    const single = await api.service.verify(caller, 'someone@ip1.com', { method: 'quick' });
    expect(single).toMatchObject({ charged: 0, verdict: { reason: 'blocked_by_filter' } });
    const allowed = await api.service.verify(caller, 'someone@ip2.com', { method: 'quick' });
    expect(allowed).toMatchObject({ charged: 0, verdict: { reason: 'allowed_by_filter' } });
  }, 60_000);

  it('a worker stopped mid-job leaves its chunk to another: nothing stored is verified again', async () => {
    store = createMemoryStore();
    queueName = `mq-${queues++}`;
    const api = member(false);
    const first = member(true);
    await api.service.start();
    await first.service.start();
    const account = await api.service.admin.createAccount({
      email: 'ops@example.org',
      credits: 10_000,
    });
    const created = await api.service.submitBatch(
      { accountId: account.id },
      { emails: EMAILS, method: 'quick' },
    );
    // Stop the only worker once it has stored some results, then start another.
    for (let i = 0; i < 400; i++) {
      const status = await api.service.batchStatus({ accountId: account.id }, created.id);
      if (status.processed > SIZE / 10) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    await first.service.stop();
    let pendingAtStop = 0;
    for (let after = -1; ;) {
      const page = await store.pendingJobItems(created.id, after, 1_000);
      if (page.length === 0) break;
      pendingAtStop += page.length;
      after = page[page.length - 1]?.position ?? after;
    }
    expect(pendingAtStop).toBeGreaterThan(0);
    expect(pendingAtStop).toBeLessThan(BILLABLE);
    const second = member(true);
    await second.service.start();

    const status = await completion(api.service, account.id, created.id);
    expect(status).toMatchObject({ status: 'completed', processed: SIZE });
    // The second verified exactly what was left: nothing the first stored (it flushes what
    // it has when stopped) is verified again.
    expect(second.verdicts.count).toBe(pendingAtStop);
    expect(first.verdicts.count).toBeGreaterThanOrEqual(BILLABLE - pendingAtStop);
    expect(await store.balance(account.id)).toMatchObject({ used: BILLABLE, reserved: 0 });
  }, 60_000);
});

run('a BullMQ worker while Redis is away', () => {
  it('stops within its deadline instead of waiting for Redis forever', async () => {
    const redis = await startRedisServer();
    const service = createService({
      engine: createEngine({ offline: true }),
      store: createMemoryStore(),
      batch: { runner: bullmqBatchRunner({ connection: redis.url, work: true }) },
    });
    try {
      await service.start();
      await redis.stop();
      const stopped = await Promise.race([
        service.stop().then(() => 'stopped'),
        new Promise((resolve) => setTimeout(resolve, 15_000, 'still waiting')),
      ]);
      expect(stopped).toBe('stopped');
    } finally {
      await redis.close();
    }
  }, 30_000);
});
