import { afterEach, describe, expect, it, vi } from 'vitest';
import { fixture as baseFixture, refusal, STORES } from '../helpers/service.js';

afterEach(() => {
  vi.useRealTimers();
});

describe.each(STORES)('key rotation on %s', (_name, makeStore) => {
  const fixture = () => baseFixture({ store: makeStore() });

  it('never extends a grace period by rotating again during it', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = 1_800_000_000_000;
    vi.setSystemTime(start);
    const { service, accountId, secret } = await fixture();
    const [original] = await service.admin.listKeys(accountId);
    await service.admin.rotateKey(accountId, original!.id, { graceSeconds: 60 });
    vi.setSystemTime(start + 30_000);
    // A second rotation of the same key, asking for a day: the old key still ends at +60 s.
    await service.admin.rotateKey(accountId, original!.id, { graceSeconds: 86_400 });
    const [old] = await service.admin.listKeys(accountId);
    expect(old!.expiresAt).toBe(start + 60_000);
    vi.setSystemTime(start + 60_000);
    expect(
      (await refusal(service.authenticate({ apiKey: secret, endpoint: 'verify' }))).status,
    ).toBe(401);
  });

  it('may shorten a grace period, down to ending it at once', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = 1_800_000_000_000;
    vi.setSystemTime(start);
    const { service, accountId, secret } = await fixture();
    const [original] = await service.admin.listKeys(accountId);
    await service.admin.rotateKey(accountId, original!.id, { graceSeconds: 3600 });
    vi.setSystemTime(start + 1000);
    await service.admin.rotateKey(accountId, original!.id, { graceSeconds: 10 });
    expect((await service.admin.listKeys(accountId))[0]!.expiresAt).toBe(start + 11_000);
    await service.admin.rotateKey(accountId, original!.id);
    expect((await service.admin.listKeys(accountId))[0]!.revokedAt).toBe(start + 1000);
    expect(
      (await refusal(service.authenticate({ apiKey: secret, endpoint: 'verify' }))).status,
    ).toBe(401);
  });
});

describe.each(STORES)('public key trusted domains on %s', (_name, makeStore) => {
  const fixture = () => baseFixture({ store: makeStore() });

  it('refuses a public suffix when the key is created or updated, storing nothing', async () => {
    const { service, accountId } = await fixture();
    for (const pattern of ['com', '*.com', '*.co.uk', 'co.uk', '*.github.io']) {
      const error = await refusal(
        service.admin.createKey(accountId, { kind: 'public', trustedDomains: [pattern] }),
      );
      expect(error.code).toBe('invalid_request');
      expect(error.context).toEqual({ field: 'trusted_domains' });
    }
    const { key } = await service.admin.createKey(accountId, {
      kind: 'public',
      trustedDomains: ['*.example.co.uk'],
    });
    const error = await refusal(
      service.admin.updateKey(accountId, key.id, { trustedDomains: ['shop.example.com', '*.com'] }),
    );
    expect(error.context).toEqual({ field: 'trusted_domains' });
    const keys = await service.admin.listKeys(accountId);
    expect(keys.map((k) => k.trustedDomains)).toEqual([[], ['*.example.co.uk']]);
  });
});
