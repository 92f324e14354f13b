import { afterEach, describe, expect, it, vi } from 'vitest';
import { ServiceError } from '../../src/service/service-error.js';
import { fixture, storesOnDisk } from '../helpers/service.js';

afterEach(() => {
  vi.useRealTimers();
});

const stores = storesOnDisk('rate');

describe.each(stores)('rate limits on the %s store', (_name, makeStore) => {
  it('admits exactly the plan limit of N concurrent requests on one key', async () => {
    for (const [plan, limit] of [
      ['free', 10],
      ['starter', 60],
    ] as const) {
      const { service, secret } = await fixture({ store: makeStore(), account: { plan } });
      const outcomes = await Promise.allSettled(
        Array.from({ length: limit * 2 + 7 }, () =>
          service.authenticate({ apiKey: secret, endpoint: 'verify' }),
        ),
      );
      const admitted = outcomes.filter((o) => o.status === 'fulfilled');
      expect(admitted).toHaveLength(limit);
      const remaining = admitted
        .map((o) => (o as PromiseFulfilledResult<{ rateLimit: { remaining: number } }>).value)
        .map((caller) => caller.rateLimit.remaining)
        .sort((a, b) => a - b);
      expect(remaining).toEqual(Array.from({ length: limit }, (_, i) => i));
      for (const outcome of outcomes) {
        if (outcome.status === 'fulfilled') continue;
        const error = outcome.reason as ServiceError;
        expect(error.code).toBe('rate_limit_exceeded');
        expect(error.status).toBe(429);
        expect(error.rateLimit).toMatchObject({ limit, remaining: 0 });
        expect(error.toJSON()).toMatchObject({ error: 'rate_limit_exceeded' });
        expect(error.context.retry_after).toBeGreaterThanOrEqual(1);
        expect(error.context.retry_after).toBeLessThanOrEqual(60);
      }
      await service.store.close();
    }
  });

  it('resets at the window edge, and says when in X-RateLimit-Reset terms', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = 1_800_000_000_000;
    vi.setSystemTime(start);
    const { service, secret } = await fixture({ store: makeStore(), account: { plan: 'free' } });
    const hit = () => service.authenticate({ apiKey: secret, endpoint: 'verify' });
    const first = await hit();
    // X-RateLimit-Reset is Unix seconds, an integer.
    expect(first.rateLimit).toEqual({ limit: 10, remaining: 9, reset: (start + 60_000) / 1000 });
    for (let i = 0; i < 9; i++) await hit();
    vi.setSystemTime(start + 59_000);
    const refused = await hit().catch((e: unknown) => e as ServiceError);
    expect(refused).toBeInstanceOf(ServiceError);
    expect((refused as ServiceError).context).toEqual({ retry_after: 1 });
    expect((refused as ServiceError).rateLimit).toEqual({
      limit: 10,
      remaining: 0,
      reset: (start + 60_000) / 1000,
    });
    vi.setSystemTime(start + 59_999);
    await expect(hit()).rejects.toBeInstanceOf(ServiceError);
    vi.setSystemTime(start + 60_000);
    const fresh = await hit();
    expect(fresh.rateLimit).toEqual({ limit: 10, remaining: 9, reset: (start + 120_000) / 1000 });
    await service.store.close();
  });

  it('holds the per-day limit across minutes, and a refused minute does not count for the day', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = 1_800_000_000_000;
    vi.setSystemTime(start);
    const { service, secret, accountId } = await fixture({
      store: makeStore(),
      account: { plan: 'free' },
    });
    const hit = () =>
      service.authenticate({ apiKey: secret, endpoint: 'verify' }).then(
        () => 'ok',
        (e: ServiceError) => e.message,
      );
    let admitted = 0;
    for (let minute = 0; minute < 12; minute++) {
      vi.setSystemTime(start + minute * 60_000);
      // 15 a minute: 10 admitted by the minute window until the day's 100 are gone.
      for (let i = 0; i < 15; i++) if ((await hit()) === 'ok') admitted++;
    }
    expect(admitted).toBe(100);
    vi.setSystemTime(start + 12 * 60_000);
    expect(await hit()).toMatch(/100 requests a day/);
    // The day limit's refusal reports the day window, not the minute's figures.
    const dayRefusal = await service
      .authenticate({ apiKey: secret, endpoint: 'verify' })
      .catch((e: unknown) => e as ServiceError);
    expect(dayRefusal).toBeInstanceOf(ServiceError);
    const dayEnd = start + 86_400_000;
    expect((dayRefusal as ServiceError).rateLimit).toEqual({
      limit: 10,
      remaining: 0,
      reset: dayEnd / 1000,
    });
    expect((dayRefusal as ServiceError).context).toEqual({
      retry_after: (dayEnd - (start + 12 * 60_000)) / 1000,
    });
    // A plan change takes effect at once, with the day's count kept.
    await service.admin.changePlan(accountId, 'starter');
    expect(await hit()).toBe('ok');
    vi.setSystemTime(start + 86_400_000);
    await service.admin.changePlan(accountId, 'free');
    expect(await hit()).toBe('ok');
    await service.store.close();
  });

  it('reports Reset in whole seconds when the window ends within a second', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = 1_800_000_000_250;
    vi.setSystemTime(start);
    const { service, secret } = await fixture({ store: makeStore(), account: { plan: 'free' } });
    const caller = await service.authenticate({ apiKey: secret, endpoint: 'verify' });
    // The window ends at ...060.25 s: the header says 1,800,000,061, when it has reset.
    expect(caller.rateLimit.reset).toBe(1_800_000_061);
    expect(Number.isInteger(caller.rateLimit.reset)).toBe(true);
    await service.store.close();
  });

  it('never lets one visitor of a public key spend the key for the others', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = 1_800_000_000_000;
    vi.setSystemTime(start);
    const { service, accountId } = await fixture({
      store: makeStore(),
      account: { plan: 'free' },
    });
    const { secret } = await service.admin.createKey(accountId, {
      kind: 'public',
      trustedDomains: ['shop.example.com'],
    });
    const from = (clientIp: string) =>
      service
        .authenticate({
          apiKey: secret,
          endpoint: 'verify',
          clientIp,
          origin: 'https://shop.example.com',
        })
        .then(
          () => 'ok',
          (e: ServiceError) => e,
        );
    // One visitor sends 100 requests over 10 minutes: 10 are admitted, 90 refused for them.
    let admitted = 0;
    for (let minute = 0; minute < 10; minute++) {
      vi.setSystemTime(start + minute * 60_000);
      for (let i = 0; i < 10; i++) if ((await from('203.0.113.66')) === 'ok') admitted++;
    }
    expect(admitted).toBe(10);
    const refusedVisitor = await from('203.0.113.66');
    expect(refusedVisitor).toBeInstanceOf(ServiceError);
    expect((refusedVisitor as ServiceError).rateLimit).toMatchObject({
      remaining: 0,
      reset: (start + 86_400_000) / 1000,
    });
    // Those refusals counted against nothing else: 90 other visitors get through today.
    let others = 0;
    for (let minute = 10; minute < 19; minute++) {
      vi.setSystemTime(start + minute * 60_000);
      for (let i = 0; i < 10; i++) {
        if ((await from(`198.51.100.${minute * 10 + i - 99}`)) === 'ok') others++;
      }
    }
    expect(others).toBe(90);
    await service.store.close();
  });
});
