import { describe, expect, it } from 'vitest';
import { createEngine } from '../../src/index.js';
import type { AccountRecord, KeyRecord } from '../../src/ports/store.js';
import { createService } from '../../src/service.js';
import { createKeyCache } from '../../src/service/key-cache.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { createManualClock } from '../../src/testing.js';
import { refusal } from '../helpers/service.js';

const known = (id: string) => ({
  key: { id } as KeyRecord,
  account: { id: 'acct_a' } as AccountRecord,
});

describe('createKeyCache', () => {
  it('keeps a key for its time to live, then reads again', () => {
    const clock = createManualClock(1000);
    const cache = createKeyCache(clock, 1000);
    cache.set('h', known('key_1'), cache.generation());
    clock.set(1999);
    expect(cache.get('h')?.key.id).toBe('key_1');
    clock.set(2000);
    expect(cache.get('h')).toBeUndefined();
  });

  it('keeps nothing read before a clear: the read may predate the change', () => {
    const cache = createKeyCache(createManualClock(), 1000);
    const generation = cache.generation();
    cache.clear();
    cache.set('h', known('key_1'), generation);
    expect(cache.get('h')).toBeUndefined();
  });

  it('starts afresh past its size bound', () => {
    const cache = createKeyCache(createManualClock(), 1000, 2);
    for (const hash of ['a', 'b', 'c']) cache.set(hash, known(hash), cache.generation());
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('c')?.key.id).toBe('c');
  });
});

describe('authenticate with the key cache', () => {
  it('refuses a key revoked through the service at once', async () => {
    const service = createService({
      engine: createEngine({ offline: true }),
      store: createSqliteStore(':memory:'),
    });
    const account = await service.admin.createAccount({ email: 'a@example.org', credits: 0 });
    const { secret, key } = await service.admin.createKey(account.id);
    await service.authenticate({ apiKey: secret, endpoint: 'verify' });
    await service.admin.revokeKey(account.id, key.id);
    expect(
      (await refusal(service.authenticate({ apiKey: secret, endpoint: 'verify' }))).status,
    ).toBe(401);
  });

  it('sees a plan change through the service at once', async () => {
    const service = createService({
      engine: createEngine({ offline: true }),
      store: createSqliteStore(':memory:'),
    });
    const account = await service.admin.createAccount({
      email: 'a@example.org',
      plan: 'free',
      credits: 0,
    });
    const { secret } = await service.admin.createKey(account.id);
    await service.authenticate({ apiKey: secret, endpoint: 'verify' });
    await service.admin.changePlan(account.id, 'enterprise');
    const caller = await service.authenticate({ apiKey: secret, endpoint: 'verify' });
    expect(caller.rateLimit.limit).toBe(300);
  });

  it('refuses a key another service on the same store revoked once its second is up', async () => {
    const clock = createManualClock(1_800_000_000_000);
    const store = createSqliteStore(':memory:');
    const engine = createEngine({ offline: true });
    const server = createService({ engine, store, clock });
    const cli = createService({ engine, store, clock });
    const account = await cli.admin.createAccount({ email: 'a@example.org', credits: 0 });
    const { secret, key } = await cli.admin.createKey(account.id);
    await server.authenticate({ apiKey: secret, endpoint: 'verify' });
    await cli.admin.revokeKey(account.id, key.id);
    clock.advance(1000);
    expect(
      (await refusal(server.authenticate({ apiKey: secret, endpoint: 'verify' }))).status,
    ).toBe(401);
  });
});
