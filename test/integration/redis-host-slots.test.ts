import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodeSmtp } from '../../src/adapters/node/smtp.js';
import { createRedisHostSlots } from '../../src/bullmq.js';
import { startLineServer } from '../helpers/line-smtp-server.js';
import { redisAvailable, startRedisServer, type RedisTestServer } from '../helpers/redis-server.js';
import { pause } from '../helpers/waiting.js';

const run = redisAvailable() ? describe : describe.skip;

run('per-MX-host slots shared through Redis', () => {
  let redis: RedisTestServer;
  let prefixes = 0;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(() => redis?.close());

  /** Slots as three worker processes would have them: a connection each, one key space. */
  function workers(count: number, options: { perHost?: number; leaseMs?: number } = {}) {
    const keyPrefix = `slots-${prefixes++}:`;
    return Array.from({ length: count }, () =>
      createRedisHostSlots(redis.url, { ...options, keyPrefix }),
    );
  }

  it('never lets more than perHost sessions hold one host, across workers', async () => {
    const slots = workers(3, { perHost: 2 });
    let holding = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const release = await (slots[i % 3] as (typeof slots)[0]).acquire('192.0.2.25');
        holding++;
        most = Math.max(most, holding);
        await pause(10);
        holding--;
        release();
      }),
    );
    expect(most).toBe(2);
    // Another host was never limited by these.
    const other = await Promise.all([
      slots[0]?.acquire('192.0.2.26'),
      slots[1]?.acquire('192.0.2.26'),
    ]);
    other.forEach((release) => release?.());
    for (const s of slots) await s.close();
  });

  it('frees the slots of a worker that died holding them once their lease lapses', async () => {
    const [dead, alive] = workers(2, { perHost: 1, leaseMs: 600 }) as [
      ReturnType<typeof createRedisHostSlots>,
      ReturnType<typeof createRedisHostSlots>,
    ];
    await dead.acquire('192.0.2.30'); // never released: its process is gone
    let granted = false;
    const waiting = alive.acquire('192.0.2.30').then((release) => {
      granted = true;
      return release;
    });
    await pause(150);
    expect(granted).toBe(false);
    (await waiting)();
    expect(granted).toBe(true);
    await dead.close();
    await alive.close();
  });

  it('stops waiting when the caller aborts', async () => {
    const [slots] = workers(1, { perHost: 1 }) as [ReturnType<typeof createRedisHostSlots>];
    const release = await slots.acquire('192.0.2.40');
    const controller = new AbortController();
    const waiting = slots.acquire('192.0.2.40', controller.signal);
    controller.abort(new Error('stopped'));
    await expect(waiting).rejects.toThrow('stopped');
    release();
    (await slots.acquire('192.0.2.40'))();
    await slots.close();
  });

  it('a prober that cannot get a shared slot does not connect, and judges no mailbox', async () => {
    const server = await startLineServer(() => null);
    try {
      const smtp = createNodeSmtp({
        heloName: 'probe.example.org',
        mailFrom: 'probe@example.org',
        port: server.port,
        allowPrivateNetworks: true,
        resolveHost: async () => ['127.0.0.1'],
        sharedHostSlots: {
          acquire: () => Promise.reject(new Error('Redis is unreachable')),
        },
      });
      const report = await smtp.probe({
        domain: 'example.org',
        hosts: ['mx.example.org'],
        recipients: [{ address: 'alice@example.org', smtpUtf8: false }],
      });
      expect(report.recipients[0]?.class).toBe('no_connect');
      expect(server.connections()).toBe(0);
    } finally {
      await server.close();
    }
  });
});
