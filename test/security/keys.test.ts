import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { createHandler } from '../../src/http/handler.js';
import type { Store } from '../../src/ports/store.js';
import { createRedisStore } from '../../src/redis.js';
import { createService } from '../../src/compose/service.js';
import { type Service } from '../../src/service/service.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { redisAvailable, startRedisServer, type RedisTestServer } from '../helpers/redis-server.js';

/**
 * API keys at rest and in flight: a store holds only a key's SHA-256, a display
 * prefix and its last four characters, whichever store it is; the whole key is never written
 * to a log, an error message or the 500 envelope.
 */

const dir = mkdtempSync(join(tmpdir(), 'mailverdict-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const redisHere = redisAvailable();
const redis: RedisTestServer | undefined = redisHere ? await startRedisServer() : undefined;
afterAll(() => redis?.close());

/** Every key the service issues in one run: created, rotated, public. */
async function issueKeys(service: Service): Promise<{ secrets: string[]; accountId: string }> {
  const account = await service.admin.createAccount({
    email: 'ops@example.org',
    plan: 'enterprise',
    credits: 10,
  });
  const first = await service.admin.createKey(account.id, { name: 'first' });
  const open = await service.admin.createKey(account.id, {
    kind: 'public',
    trustedDomains: ['example.com'],
  });
  const rotated = await service.admin.rotateKey(account.id, first.key.id, { graceSeconds: 60 });
  const restricted = await service.admin.createKey(account.id, { allowedIps: ['192.0.2.0/24'] });
  // Each is used once, so any cache or usage record a store keeps has been written.
  for (const { secret } of [first, rotated, restricted]) {
    await service
      .authenticate({ authorization: `Bearer ${secret}`, endpoint: 'account' })
      .catch(() => undefined);
  }
  return {
    secrets: [first.secret, open.secret, rotated.secret, restricted.secret],
    accountId: account.id,
  };
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The random part of a key: what must not be stored, in any encoding we can think of. */
function forms(secret: string): string[] {
  const random = secret.slice(6);
  return [secret, random, random.slice(4, -4), Buffer.from(secret).toString('base64')];
}

describe('keys at rest', () => {
  it('memory: no stored record carries a key, only its SHA-256', async () => {
    const store = createMemoryStore();
    const service = createService({ engine: createEngine({ offline: true }), store });
    const { secrets, accountId } = await issueKeys(service);
    const records = await store.listKeys(accountId);
    const text = JSON.stringify(records);
    for (const secret of secrets) {
      for (const form of forms(secret)) expect(text).not.toContain(form);
      expect(text).toContain(sha256(secret));
      expect((await store.findKeyByHash(sha256(secret)))?.hash).toBe(sha256(secret));
    }
    expect(JSON.stringify(await service.admin.listKeys(accountId))).not.toContain('"hash"');
    await service.stop();
  });

  it('SQLite: no byte of the database or its journal holds a key', async () => {
    const path = join(dir, `keys-${files++}.db`);
    const store = createSqliteStore(path);
    const service = createService({ engine: createEngine({ offline: true }), store });
    const { secrets } = await issueKeys(service);
    const bytes = () =>
      Buffer.concat(
        readdirSync(dir)
          .filter((name) => name.startsWith(path.slice(dir.length + 1)))
          .map((name) => readFileSync(join(dir, name))),
      ).toString('latin1');
    const before = bytes();
    await service.stop();
    await store.close();
    const after = bytes();
    for (const text of [before, after]) {
      for (const secret of secrets) {
        for (const form of forms(secret)) expect(text).not.toContain(form);
      }
    }
    // The hashes are there: the scan reads what the store wrote.
    expect(after + before).toContain(sha256(secrets[0]!));
  });

  it.skipIf(!redisHere)('Redis: no key or value in the database holds a key', async () => {
    const keyPrefix = `keys-${files++}:`;
    const store: Store = createRedisStore(redis!.url, { keyPrefix, holdSweepMs: 0 });
    const service = createService({ engine: createEngine({ offline: true }), store });
    const { secrets } = await issueKeys(service);
    const client = new Redis(redis!.url);
    try {
      const dump: string[] = [];
      for (const key of await client.keys('*')) {
        dump.push(key);
        const type = await client.type(key);
        if (type === 'string') dump.push(String(await client.get(key)));
        else if (type === 'hash') dump.push(JSON.stringify(await client.hgetall(key)));
        else if (type === 'zset') dump.push(JSON.stringify(await client.zrange(key, 0, -1)));
        else if (type === 'set') dump.push(JSON.stringify(await client.smembers(key)));
        else if (type === 'list') dump.push(JSON.stringify(await client.lrange(key, 0, -1)));
        else if (type === 'stream') dump.push(JSON.stringify(await client.xrange(key, '-', '+')));
      }
      const text = dump.join('\n');
      for (const secret of secrets) {
        for (const form of forms(secret)) expect(text).not.toContain(form);
      }
      expect(text).toContain(sha256(secrets[0]!));
    } finally {
      client.disconnect();
      await service.stop();
      await store.close();
    }
  });
});

describe('keys in flight', () => {
  let output: string[] = [];
  beforeEach(() => {
    output = [];
    const capture = (...args: unknown[]) => {
      output.push(
        args
          .map((arg) =>
            arg instanceof Error ? `${arg.message}\n${arg.stack ?? ''}` : JSON.stringify(arg),
          )
          .join(' '),
      );
    };
    for (const level of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) {
      vi.spyOn(console, level).mockImplementation(capture);
    }
    vi.spyOn(process, 'emitWarning').mockImplementation(capture as never);
  });
  afterEach(() => vi.restoreAllMocks());

  /** A memory store whose key lookups and account reads fail, as a broken database would. */
  function brokenStore(): Store {
    const inner = createMemoryStore();
    let broken = false;
    return new Proxy(inner, {
      get(target, name, receiver) {
        if (name === 'breakNow') return () => (broken = true);
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (broken && (name === 'findKeyByHash' || name === 'getAccount')) {
            throw new Error(`database disk image is malformed (${String(name)})`);
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  }

  it('is in no response, log or warning, for a 401, a 400 or a 500', async () => {
    const store = brokenStore();
    const service = createService({ engine: createEngine({ offline: true }), store });
    const { secrets } = await issueKeys(service);
    const secret = secrets[0]!;
    const handler = createHandler(service);
    const base = 'http://api.test/v1';
    const revoked = `mv_sk_${'Z'.repeat(32)}`;
    const requests = [
      new Request(`${base}/account`, { headers: { authorization: `Bearer ${revoked}` } }),
      new Request(`${base}/account?api_key=${revoked}`),
      new Request(`${base}/account?api_key=${secret}&api_key=${secret}`),
      new Request(`${base}/account?api_key=${secret}&nope=1`),
      new Request(`${base}/account?api_key=${secrets[1]}`, {
        headers: { authorization: `Bearer ${secret}` },
      }),
      new Request(`${base}/account?api_key=${encodeURIComponent(`${secret}\u0001`)}`),
      new Request(`${base}/verify?email=a@example.org`, {
        headers: { authorization: `Bearer ${secret}x` },
      }),
      new Request(`${base}/verify`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: '{"emails": "not a list"}',
      }),
    ];
    const bodies: string[] = [];
    for (const request of requests) bodies.push(await (await handler(request)).text());
    (store as unknown as { breakNow(): void }).breakNow();
    const failed = await handler(
      new Request(`${base}/account?api_key=${secrets[2]}`, {
        headers: { 'x-forwarded-for': secret },
      }),
    );
    expect(failed.status).toBe(500);
    const envelope = await failed.text();
    expect(JSON.parse(envelope)).toMatchObject({ error: 'internal_error' });
    expect(envelope).not.toMatch(/database|malformed|at \w+ \(|\.ts:\d+/);
    bodies.push(envelope);
    const everything = [...bodies, ...output].join('\n');
    for (const key of [...secrets, revoked]) {
      for (const form of forms(key)) expect(everything).not.toContain(form);
    }
    // The 500 was reported (so `output` did capture the logger), without the key.
    expect(output.join('\n')).toContain('malformed');
    await service.stop();
  });
});
