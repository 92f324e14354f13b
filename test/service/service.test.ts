import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { createService } from '../../src/compose/service.js';
import { ServiceError } from '../../src/service/service-error.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { fixture, refusal } from '../helpers/service.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('accounts', () => {
  it('creates an account with its credits, plan, anchor day and webhook secret', async () => {
    const { service, accountId } = await fixture({ account: { billingAnchorDay: 31 } });
    const info = await service.admin.getAccount(accountId);
    expect(info).toMatchObject({
      email: 'ops@example.org',
      plan: 'enterprise',
      billingAnchorDay: 31,
      credits: { available: 100, reserved: 0, used: 0, total: 100 },
    });
    expect(info.id).toMatch(/^acct_[0-9A-Za-z]{24}$/);
    expect(info.webhookSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  });

  it('refuses bad input with invalid_request naming the field', async () => {
    const service = createService({
      engine: createEngine({ offline: true }),
      store: createMemoryStore(),
    });
    const cases: [unknown, string][] = [
      [{ email: 'not an address' }, 'email'],
      [{ email: 42 }, 'email'],
      [{ email: 'a@example.org', plan: 'gold' }, 'plan'],
      [{ email: 'a@example.org', credits: -1 }, 'credits'],
      [{ email: 'a@example.org', credits: 1.5 }, 'credits'],
      [{ email: 'a@example.org', billingAnchorDay: 32 }, 'billing_anchor_day'],
      [null, 'account'],
    ];
    for (const [input, field] of cases) {
      const error = await refusal(service.admin.createAccount(input as never));
      expect(error.code).toBe('invalid_request');
      expect(error.status).toBe(400);
      expect(error.context).toEqual({ field });
    }
    expect((await refusal(service.admin.getAccount('acct_nope'))).status).toBe(404);
  });

  it('changes plans and tops up, a top-up with a reference applying once', async () => {
    const { service, accountId } = await fixture();
    expect((await service.admin.changePlan(accountId, 'starter')).plan).toBe('starter');
    expect((await refusal(service.admin.changePlan(accountId, 'gold' as never))).context).toEqual({
      field: 'plan',
    });
    await service.admin.grantCredits(accountId, 50, { ref: 'invoice-7' });
    const again = await service.admin.grantCredits(accountId, 50, { ref: 'invoice-7' });
    expect(again.replayed).toBe(true);
    expect(again.balance.available).toBe(150);
    expect((await refusal(service.admin.grantCredits(accountId, 0))).context).toEqual({
      field: 'amount',
    });
  });

  it('gives the account object with monthly billing periods', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.UTC(2026, 1, 20, 12)); // 20 Feb 2026
    const { service, accountId, secret } = await fixture({
      account: { plan: 'starter', billingAnchorDay: 31, credits: 40 },
    });
    const caller = await service.authenticate({
      authorization: `Bearer ${secret}`,
      endpoint: 'account',
    });
    await service.verify(caller, 'alice@example.org', { method: 'standard' });
    expect(await service.account(caller)).toEqual({
      email: 'ops@example.org',
      plan: 'starter',
      credits: { available: 38, reserved: 0, used: 2, total: 40 },
      rate_limit: { per_minute: 60, remaining: 59 },
      // Anchored on the 31st: January's period runs to Feb 27 inclusive, the next one
      // starting on Feb 28, the month's last day (YYYY-MM-DD, end inclusive).
      billing_period: { start: '2026-01-31', end: '2026-02-27' },
    });
    expect(accountId).toBe(caller.accountId);
  });
});

describe('keys', () => {
  it('shows a key once; stores and lists only its hash, prefix and last four', async () => {
    const { service, accountId, secret } = await fixture();
    expect(secret).toMatch(/^mv_sk_[0-9A-Za-z]{32}$/);
    const [listed] = await service.admin.listKeys(accountId);
    expect(listed).toMatchObject({
      kind: 'private',
      displayPrefix: secret.slice(0, 10),
      lastFour: secret.slice(-4),
      revokedAt: null,
    });
    expect(JSON.stringify(listed)).not.toContain(secret.slice(6));
    expect(listed).not.toHaveProperty('hash');
  });

  it('authenticates by bearer header or api_key parameter; refuses missing and unknown keys', async () => {
    const { service, secret, accountId } = await fixture();
    const byHeader = await service.authenticate({
      authorization: `Bearer ${secret}`,
      endpoint: 'verify',
    });
    expect(byHeader.accountId).toBe(accountId);
    const byParameter = await service.authenticate({ apiKey: secret, endpoint: 'verify' });
    expect(byParameter.key.id).toBe(byHeader.key.id);

    const unknownKey = `mv_sk_${'A'.repeat(32)}`;
    for (const request of [
      {},
      { authorization: 'Basic Zm9vOmJhcg==' },
      { authorization: `Bearer ${unknownKey}` },
      { apiKey: 'mv_sk_short' },
      { authorization: `Bearer ${secret}x` },
    ]) {
      const error = await refusal(service.authenticate({ ...request, endpoint: 'verify' }));
      expect(error.code).toBe('unauthorized');
      expect(error.status).toBe(401);
    }
  });

  it('revokes and rotates keys, with an optional grace period for the old one', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_800_000_000_000);
    const { service, accountId, secret } = await fixture();
    const [original] = await service.admin.listKeys(accountId);
    const rotated = await service.admin.rotateKey(accountId, original!.id, { graceSeconds: 60 });
    expect(rotated.secret).not.toBe(secret);
    // Both work during the grace period, the old one not after it.
    await service.authenticate({ apiKey: secret, endpoint: 'verify' });
    await service.authenticate({ apiKey: rotated.secret, endpoint: 'verify' });
    vi.setSystemTime(1_800_000_060_000);
    expect(
      (await refusal(service.authenticate({ apiKey: secret, endpoint: 'verify' }))).status,
    ).toBe(401);
    // Rotation without grace and revocation take effect at once.
    const again = await service.admin.rotateKey(accountId, rotated.key.id);
    expect(
      (await refusal(service.authenticate({ apiKey: rotated.secret, endpoint: 'verify' }))).status,
    ).toBe(401);
    await service.admin.revokeKey(accountId, again.key.id);
    expect(
      (await refusal(service.authenticate({ apiKey: again.secret, endpoint: 'verify' }))).status,
    ).toBe(401);
    expect((await refusal(service.admin.rotateKey(accountId, again.key.id))).code).toBe('conflict');
    expect((await refusal(service.admin.revokeKey(accountId, 'key_nope'))).status).toBe(404);
    expect((await service.admin.listKeys(accountId)).map((k) => k.revokedAt !== null)).toEqual([
      false,
      true,
      true,
    ]);
  });

  it("keeps a key to its account's own administration", async () => {
    const { service, accountId } = await fixture();
    const other = await service.admin.createAccount({ email: 'other@example.org' });
    const [key] = await service.admin.listKeys(accountId);
    expect((await refusal(service.admin.revokeKey(other.id, key!.id))).status).toBe(404);
  });

  it('enforces a private key IP allow-list over IPv4 and IPv6 CIDR ranges', async () => {
    const { service, accountId } = await fixture();
    const { secret } = await service.admin.createKey(accountId, {
      allowedIps: ['192.0.2.0/24', '2001:db8:aa::/48', '198.51.100.7'],
    });
    const from = (clientIp: string | undefined) =>
      service.authenticate({
        apiKey: secret,
        endpoint: 'batch',
        ...(clientIp ? { clientIp } : {}),
      });
    for (const ip of [
      '192.0.2.1',
      '192.0.2.254',
      '::ffff:192.0.2.9',
      '2001:db8:aa:1::5',
      '198.51.100.7',
    ]) {
      await expect(from(ip)).resolves.toMatchObject({ accountId });
    }
    for (const ip of ['192.0.3.1', '2001:db8:ab::1', '198.51.100.8', 'garbage', undefined]) {
      const error = await refusal(from(ip));
      expect(error.code).toBe('forbidden');
      expect(error.status).toBe(403);
    }
  });

  it('validates key settings and normalizes them', async () => {
    const { service, accountId } = await fixture();
    const created = await service.admin.createKey(accountId, {
      allowedIps: ['10.1.2.3/8', '2001:DB8::/32'],
    });
    expect(created.key.allowedIps).toEqual(['10.0.0.0/8', '2001:db8::/32']);
    const invalid: [object, string][] = [
      [{ allowedIps: ['10.0.0.0/33'] }, 'allowed_ips'],
      [{ allowedIps: ['127.1'] }, 'allowed_ips'],
      [{ allowedIps: 'any' }, 'allowed_ips'],
      [{ trustedDomains: ['example.com'] }, 'trusted_domains'],
      [{ kind: 'public' }, 'trusted_domains'],
      [{ kind: 'public', trustedDomains: ['ex ample.com'] }, 'trusted_domains'],
      [
        { kind: 'public', trustedDomains: ['example.com'], allowedIps: ['10.0.0.1'] },
        'allowed_ips',
      ],
      [{ kind: 'secret' }, 'kind'],
    ];
    for (const [input, field] of invalid) {
      const error = await refusal(service.admin.createKey(accountId, input));
      expect(error.context).toEqual({ field });
    }
    expect(await service.admin.listKeys(accountId)).toHaveLength(2);
  });
});

describe('public keys', () => {
  async function publicFixture() {
    const base = await fixture();
    const { secret } = await base.service.admin.createKey(base.accountId, {
      kind: 'public',
      trustedDomains: ['shop.example.com', '*.example.net', 'bücher.example'],
    });
    return { ...base, publicKey: secret };
  }

  it('admits pages on trusted domains only, from Origin or else Referer', async () => {
    const { service, publicKey } = await publicFixture();
    expect(publicKey).toMatch(/^mv_pk_/);
    const from = (headers: { origin?: string; referer?: string }) =>
      service.authenticate({
        apiKey: publicKey,
        endpoint: 'verify',
        clientIp: '203.0.113.5',
        ...headers,
      });
    for (const ok of [
      { origin: 'https://shop.example.com' },
      { origin: 'https://shop.example.com:8443' },
      { origin: 'https://a.b.example.net' },
      { origin: 'https://xn--bcher-kva.example' },
      { origin: 'https://BÜCHER.example' },
      { referer: 'https://shop.example.com/checkout?x=1' },
    ]) {
      await expect(from(ok)).resolves.toBeDefined();
    }
    for (const bad of [
      {},
      { origin: 'https://example.com' },
      { origin: 'https://example.net' },
      { origin: 'https://evil-shop.example.com.attacker.test' },
      { origin: 'https://notexample.net' },
      { origin: 'null' },
      { origin: 'ftp://shop.example.com' },
      { referer: 'not a url' },
    ]) {
      expect((await refusal(from(bad))).code).toBe('forbidden');
    }
  });

  it('may call single verify only', async () => {
    const { service, publicKey } = await publicFixture();
    for (const endpoint of ['batch', 'account', 'filters'] as const) {
      const error = await refusal(
        service.authenticate({
          apiKey: publicKey,
          endpoint,
          clientIp: '203.0.113.5',
          origin: 'https://shop.example.com',
        }),
      );
      expect(error.code).toBe('forbidden');
    }
  });

  it('admits 10 requests a day per end user, an IPv6 /64 counting as one user', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_800_000_000_000);
    const { service, publicKey } = await publicFixture();
    const from = (clientIp: string) =>
      service.authenticate({
        apiKey: publicKey,
        endpoint: 'verify',
        clientIp,
        origin: 'https://shop.example.com',
      });
    let admitted = 0;
    for (let i = 0; i < 15; i++) {
      // Spread over the day so that the per-minute limit is not what refuses.
      vi.setSystemTime(1_800_000_000_000 + i * 120_000);
      const ip = `2001:db8:1:2::${i.toString(16)}`;
      admitted += await from(ip).then(
        () => 1,
        (error: ServiceError) => {
          expect(error.code).toBe('rate_limit_exceeded');
          return 0;
        },
      );
    }
    expect(admitted).toBe(10);
    await expect(from('2001:db8:1:3::1')).resolves.toBeDefined();
    await expect(from('203.0.113.9')).resolves.toBeDefined();
    expect((await refusal(from('2001:db8:1:2::ffff'))).status).toBe(429);
    // A day later the same end user is welcome again.
    vi.setSystemTime(1_800_000_000_000 + 86_400_000);
    await expect(from('2001:db8:1:2::1')).resolves.toBeDefined();
  });
});

describe('verify with credits', () => {
  it('charges the method cost and refuses with 402 when credits are short', async () => {
    const { service, accountId, secret } = await fixture({ account: { credits: 3 } });
    const caller = await service.authenticate({ apiKey: secret, endpoint: 'verify' });
    const standard = await service.verify(caller, 'alice@example.org');
    expect(standard).toMatchObject({ charged: 2, verdict: { method: 'standard' } });
    const error = await refusal(service.verify(caller, 'bob@example.org', { method: 'standard' }));
    expect(error.code).toBe('insufficient_credits');
    expect(error.status).toBe(402);
    expect(error.toJSON()).toEqual({
      error: 'insufficient_credits',
      message: 'Not enough credits: 2 needed, 1 available.',
      needed: 2,
      available: 1,
    });
    const quick = await service.verify(caller, 'bob@example.org', { method: 'quick' });
    expect(quick.charged).toBe(1);
    const balance = (await service.admin.getAccount(accountId)).credits;
    expect(balance).toEqual({ available: 0, reserved: 0, used: 3, total: 3 });
  });

  it('charges nothing for the test addresses, and does charge for invalid syntax', async () => {
    const { service, accountId } = await fixture({ account: { credits: 1 } });
    const caller = { accountId };
    for (const address of [
      'deliverable@example.com',
      'UNDELIVERABLE@example.com',
      'risky@example.com',
    ]) {
      const result = await service.verify(caller, address, { method: 'smtp' });
      expect(result.charged).toBe(0);
      expect(result.verdict.testAddress).toBe(true);
    }
    const invalid = await service.verify(caller, 'bad..dots@example.org', { method: 'quick' });
    expect(invalid).toMatchObject({ charged: 1, verdict: { reason: 'invalid_email' } });
  });

  it('refunds results that could not be verified', async () => {
    const dns = createMemoryDns({ 'slow-dns.org': { kind: 'failure', code: 'timeout' } });
    const { service, accountId } = await fixture({ engine: { dns }, account: { credits: 10 } });
    const result = await service.verify({ accountId }, 'someone@slow-dns.org', { method: 'quick' });
    expect(result.verdict.reason).toBe('timeout');
    expect(result.charged).toBe(0);
    expect((await service.admin.getAccount(accountId)).credits).toEqual({
      available: 10,
      reserved: 0,
      used: 0,
      total: 10,
    });
    const kinds = (await service.admin.ledger(accountId)).map((e) => [e.kind, e.note]);
    expect(kinds).toEqual([
      ['grant', 'account created'],
      ['reserve', null],
      ['refund', 'timeout'],
    ]);
  });

  it('charges a retried request once', async () => {
    const { service, accountId } = await fixture({ account: { credits: 10 } });
    for (let i = 0; i < 3; i++) {
      const result = await service.verify({ accountId }, 'alice@example.org', {
        method: 'standard',
        requestId: 'req-42',
      });
      // The first answer again (the key is bound to it), charged once.
      expect(result.charged).toBe(2);
    }
    expect((await service.admin.getAccount(accountId)).credits.available).toBe(8);
  });

  it('releases the reservation when a verification is aborted', async () => {
    const dns = createMemoryDns({ 'example.org': ['mx.example.org'] });
    const { service, accountId } = await fixture({ engine: { dns }, account: { credits: 5 } });
    const controller = new AbortController();
    controller.abort(new Error('client went away'));
    await expect(
      service.verify({ accountId }, 'alice@example.org', { signal: controller.signal }),
    ).rejects.toThrow('client went away');
    expect((await service.admin.getAccount(accountId)).credits).toMatchObject({
      available: 5,
      reserved: 0,
    });
  });

  it('refuses a bad address type or method with invalid_request', async () => {
    const { service, accountId } = await fixture();
    expect((await refusal(service.verify({ accountId }, 42))).context).toEqual({ field: 'email' });
    expect(
      (await refusal(service.verify({ accountId }, 'a@example.org', { method: 'deep' as never })))
        .context,
    ).toEqual({ field: 'method' });
    expect((await service.admin.getAccount(accountId)).credits.available).toBe(100);
  });
});
