import { describe, expect, it } from 'vitest';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import type { Store } from '../../src/ports/store.js';
import { createMemorySmtp } from '../../src/smtp/memory-smtp.js';
import { countingDns, countingSmtp } from '../helpers/fakes.js';
import { fixture, refusal, STORES } from '../helpers/service.js';

describe('filters: create, list, delete', () => {
  it('normalizes values with the engine parser: emails, IDN domains, IPs and CIDR ranges', async () => {
    const { service, accountId } = await fixture();
    const caller = { accountId };
    const cases: [string, 'email' | 'domain' | 'ip_address', string][] = [
      ['Bob.Smith@Example.ORG', 'email', 'bob.smith@example.org'],
      ['jöhn@bücher.de', 'email', 'jöhn@xn--bcher-kva.de'],
      ['Bücher.DE', 'domain', 'xn--bcher-kva.de'],
      ['@Spam.Example.net', 'domain', 'spam.example.net'],
      ['2001:DB8:0:0::1', 'ip_address', '2001:db8::1'],
      ['::ffff:198.51.100.7', 'ip_address', '198.51.100.7'],
      ['203.0.113.77/24', 'ip_address', '203.0.113.0/24'],
    ];
    for (const [value, type, stored] of cases) {
      const created = await service.createFilter(caller, { value, type, action: 'block' });
      expect(created).toMatchObject({ type, value: stored, action: 'block', reason: null });
      expect(created.id).toMatch(/^flt_/);
    }
  });

  it('refuses a duplicate (type, value), however it is spelled, with 409', async () => {
    const { service, accountId } = await fixture();
    const caller = { accountId };
    await service.createFilter(caller, {
      value: 'xn--bcher-kva.de',
      type: 'domain',
      action: 'block',
    });
    const error = await refusal(
      service.createFilter(caller, { value: 'BÜCHER.de', type: 'domain', action: 'allow' }),
    );
    expect(error.status).toBe(409);
    expect(error.code).toBe('conflict');
    await service.createFilter(caller, {
      value: '10.0.0.0/8',
      type: 'ip_address',
      action: 'block',
    });
    expect(
      (
        await refusal(
          service.createFilter(caller, {
            value: '10.9.9.9/8',
            type: 'ip_address',
            action: 'block',
          }),
        )
      ).status,
    ).toBe(409);
    expect((await service.listFilters(caller)).total).toBe(2);
  });

  it('refuses invalid filters naming the field, storing nothing', async () => {
    const { service, accountId } = await fixture();
    const caller = { accountId };
    const bad: [object, string][] = [
      [{ value: 'not an email', type: 'email', action: 'block' }, 'value'],
      [{ value: 'exa mple.com', type: 'domain', action: 'block' }, 'value'],
      [{ value: '[192.0.2.1]', type: 'domain', action: 'block' }, 'value'],
      [{ value: '300.1.1.1', type: 'ip_address', action: 'block' }, 'value'],
      [{ value: '10.0.0.0/40', type: 'ip_address', action: 'block' }, 'value'],
      [{ value: '', type: 'domain', action: 'block' }, 'value'],
      [{ value: 'a.com', type: 'url', action: 'block' }, 'filter_type'],
      [{ value: 'a.com', type: 'domain', action: 'deny' }, 'action'],
      [{ value: 'a.com', type: 'domain', action: 'block', reason: 7 }, 'reason'],
    ];
    for (const [input, field] of bad) {
      const error = await refusal(service.createFilter(caller, input as never));
      expect(error.code).toBe('invalid_request');
      expect(error.context).toEqual({ field });
    }
    expect((await service.listFilters(caller)).total).toBe(0);
  });

  it('lists by type with pagination in a stable order, and deletes', async () => {
    const { service, accountId } = await fixture();
    const caller = { accountId };
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      ids.push(
        (
          await service.createFilter(caller, {
            value: `d${i}.com`,
            type: 'domain',
            action: 'block',
          })
        ).id,
      );
    }
    await service.createFilter(caller, {
      value: 'a@b.com',
      type: 'email',
      action: 'allow',
      reason: 'VIP',
    });
    const page2 = await service.listFilters(caller, { type: 'domain', page: 2, perPage: 3 });
    expect(page2).toMatchObject({ total: 7, page: 2, perPage: 3 });
    expect(page2.filters.map((f) => f.id)).toEqual(ids.slice(3, 6));
    expect(
      (await service.listFilters(caller, { type: 'domain', page: 9, perPage: 3 })).filters,
    ).toEqual([]);
    expect((await service.listFilters(caller)).total).toBe(8);
    for (const query of [{ page: 0 }, { perPage: 101 }, { type: 'url' }]) {
      expect((await refusal(service.listFilters(caller, query as never))).code).toBe(
        'invalid_request',
      );
    }
    expect(await service.deleteFilter(caller, ids[0]!)).toEqual({ id: ids[0], deleted: true });
    expect((await refusal(service.deleteFilter(caller, ids[0]!))).status).toBe(404);
    const other = await service.admin.createAccount({ email: 'x@example.org' });
    expect((await refusal(service.deleteFilter({ accountId: other.id }, ids[1]!))).status).toBe(
      404,
    );
    expect((await service.listFilters({ accountId: other.id })).total).toBe(0);
  });
});

describe('filters in verify', () => {
  async function filtered(
    filters: [string, 'email' | 'domain' | 'ip_address', 'block' | 'allow'][],
    credits = 1000,
  ) {
    const dns = countingDns(
      createMemoryDns(
        {
          'example.org': ['mx1.example.org'],
          'mail.corp.example.net': ['mx.corp.example.net'],
          'corp.example.net': ['mx.corp.example.net'],
        },
        { 'mx1.example.org': ['198.51.100.20'], 'mx.corp.example.net': ['2001:db8:5::25'] },
      ),
    );
    const smtp = countingSmtp(createMemorySmtp({ catchAllDomains: [] }));
    const base = await fixture({
      engine: { dns, smtp, parse: { allowDomainLiteral: true } },
      account: { credits },
    });
    for (const [value, type, action] of filters) {
      await base.service.createFilter({ accountId: base.accountId }, { value, type, action });
    }
    const verify = async (email: string) =>
      base.service.verify({ accountId: base.accountId }, email, { method: 'smtp' });
    return { ...base, dns, smtp, verify };
  }

  it('blocks by email, domain or parent domain without reaching the Dns or Smtp port', async () => {
    const { verify, dns, smtp, service, accountId } = await filtered([
      ['bad@example.org', 'email', 'block'],
      ['example.net', 'domain', 'block'],
    ]);
    for (const email of ['BAD@Example.org', 'anyone@example.net', 'x@mail.corp.example.net']) {
      const { verdict, charged } = await verify(email);
      expect(verdict).toMatchObject({
        state: 'undeliverable',
        reason: 'blocked_by_filter',
        score: 0,
      });
      expect(verdict.checks).toEqual([]);
      expect(charged).toBe(0);
    }
    expect(dns.calls).toEqual([]);
    expect(smtp.calls).toEqual([]);
    expect((await service.admin.getAccount(accountId)).credits.used).toBe(0);
  });

  it('takes the most specific filter first: email, then the domain and its parents, then IPs', async () => {
    const { verify } = await filtered([
      ['example.net', 'domain', 'block'],
      ['corp.example.net', 'domain', 'allow'],
      ['ceo@mail.corp.example.net', 'email', 'block'],
      ['vip@example.org', 'email', 'allow'],
      ['198.51.100.0/24', 'ip_address', 'block'],
    ]);
    expect((await verify('a@example.net')).verdict.reason).toBe('blocked_by_filter');
    expect((await verify('a@mail.corp.example.net')).verdict.reason).toBe('allowed_by_filter');
    expect((await verify('ceo@mail.corp.example.net')).verdict.reason).toBe('blocked_by_filter');
    // The email allow beats the MX's IP block.
    const vip = await verify('vip@example.org');
    expect(vip.verdict).toMatchObject({
      state: 'deliverable',
      reason: 'allowed_by_filter',
      score: 100,
    });
    expect((await verify('other@example.org')).verdict.reason).toBe('blocked_by_filter');
  });

  it('matches IP filters against domain literals and the IPs of the MX hosts, never probing SMTP', async () => {
    const { verify, smtp, dns } = await filtered([
      ['2001:db8:5::/48', 'ip_address', 'block'],
      ['2001:db8:5::25', 'ip_address', 'allow'],
      ['192.0.2.0/24', 'ip_address', 'block'],
    ]);
    // The /128 allow is more specific than the /48 block.
    expect((await verify('a@corp.example.net')).verdict.reason).toBe('allowed_by_filter');
    expect(dns.calls).toEqual(['mx corp.example.net', 'addresses mx.corp.example.net']);
    expect(smtp.calls).toEqual([]);
    expect((await verify('someone@[192.0.2.55]')).verdict.reason).toBe('blocked_by_filter');
    expect((await verify('someone@[IPv6:2001:db8:5::7]')).verdict.reason).toBe('blocked_by_filter');
    expect(smtp.calls).toEqual([]);
  });

  it('answers an IP match before reserving: free for an account without credits, 402 for the rest', async () => {
    // 5 credits: the smtp method costs 10.
    const { service, accountId, dns } = await filtered(
      [['198.51.100.0/24', 'ip_address', 'block']],
      5,
    );
    const caller = { accountId };
    const blocked = await service.verify(caller, 'x@example.org', {
      method: 'smtp',
      requestId: 'ip-1',
    });
    expect(blocked).toMatchObject({ charged: 0, verdict: { reason: 'blocked_by_filter' } });
    // The same key answers the first answer again, without asking anything.
    const calls = dns.calls.length;
    expect(
      await service.verify(caller, 'x@example.org', { method: 'smtp', requestId: 'ip-1' }),
    ).toEqual(blocked);
    expect(dns.calls).toHaveLength(calls);
    const refused = await refusal(service.verify(caller, 'y@corp.example.net', { method: 'smtp' }));
    expect(refused).toMatchObject({ code: 'insufficient_credits', status: 402 });
    // Nothing was reserved for the match, nor for the refusal.
    expect((await service.admin.ledger(accountId)).map((entry) => entry.kind)).toEqual(['grant']);
  });

  it('matches IDN addresses against A-label domain filters', async () => {
    const { verify } = await filtered([['xn--bcher-kva.de', 'domain', 'block']]);
    expect((await verify('jöhn@BÜCHER.de')).verdict.reason).toBe('blocked_by_filter');
    expect((await verify('a@sub.bücher.de')).verdict.reason).toBe('blocked_by_filter');
  });

  it('charges for addresses no filter matches', async () => {
    const { verify, smtp } = await filtered([['blocked.example.org', 'domain', 'block']]);
    const { verdict, charged } = await verify('bob@example.org');
    expect(verdict.reason).toBe('rejected_email');
    expect(charged).toBe(10);
    expect(smtp.calls).toHaveLength(1);
  });
});

/** A store that records which filter reads it is asked for. */
function recordingStore(inner: Store) {
  const reads: string[] = [];
  const store: Store = {
    ...inner,
    findFilters(accountId, type, values) {
      reads.push(values === undefined ? `all ${type}` : `${type} x${values.length}`);
      return inner.findFilters(accountId, type, values);
    },
    ipFilterPrefixes(accountId) {
      reads.push('ip prefixes');
      return inner.ipFilterPrefixes(accountId);
    },
  };
  return { store, reads };
}

describe.each(STORES)('IP filters by lookup, not by scan, on %s', (_name, makeStore) => {
  const zones = {
    'example.org': ['mx1.example.org', 'mx2.example.org'],
    'hosted.example.net': ['mx1.example.org', 'mx2.example.org'],
    'dual.example.net': ['mx.dual.example.net'],
    'mapped.example.net': ['mx.mapped.example.net'],
  };
  const hosts = {
    'mx1.example.org': ['198.51.100.20'],
    'mx2.example.org': ['2001:db8:7::25'],
    'mx.dual.example.net': ['203.0.113.25', '2001:db8:9::25'],
    'mx.mapped.example.net': ['::ffff:192.0.2.99'],
  };

  async function withIpFilters(
    ranges: readonly string[],
    action: (value: string) => 'block' | 'allow',
    options: { offline?: boolean } = {},
  ) {
    const recording = recordingStore(makeStore());
    const dns = countingDns(createMemoryDns(zones, hosts));
    const base = await fixture({
      store: recording.store,
      engine: options.offline
        ? { offline: true, parse: { allowDomainLiteral: true } }
        : { dns, smtp: createMemorySmtp(), parse: { allowDomainLiteral: true } },
      account: { credits: 1000 },
    });
    const caller = { accountId: base.accountId };
    for (const value of ranges) {
      await base.service.createFilter(caller, {
        value,
        type: 'ip_address',
        action: action(value),
      });
    }
    await base.service.createFilter(caller, {
      value: 'blocked.example',
      type: 'domain',
      action: 'block',
    });
    recording.reads.length = 0;
    dns.calls.length = 0;
    const verify = (email: string) => base.service.verify(caller, email, { method: 'quick' });
    return { ...base, ...recording, dns, verify };
  }

  /** 2,000 IPv4 /32s and IPv6 /128s and /64s that match none of the addresses above. */
  const many = Array.from({ length: 2000 }, (_, i) =>
    i % 3 === 0
      ? `10.${(i >> 8) & 255}.${i & 255}.1`
      : i % 3 === 1
        ? `2001:db8:ffff:${i.toString(16)}::1`
        : `2001:db8:eeee:${i.toString(16)}::/64`,
  );

  it('looks up the ranges of the prefix lengths in use, never reading every IP filter', async () => {
    const { verify, reads } = await withIpFilters(
      [...many, '198.51.100.0/24', '2001:db8:7::/48'],
      () => 'block',
    );
    expect((await verify('a@example.org')).verdict.reason).toBe('blocked_by_filter');
    expect(reads).toEqual(['email x1', 'domain x2', 'ip prefixes', 'ip_address x5']);
    // 2 IPs, one of each family: v4 /24 and /32, v6 /48, /64 and /128.
  });

  it('does no IP work offline, nor for an account without IP filters', async () => {
    const offline = await withIpFilters(many, () => 'block', { offline: true });
    expect((await offline.verify('a@example.org')).charged).toBe(1);
    expect(offline.reads).toEqual(['email x1', 'domain x2']);
    // A domain literal carries its IP: that one is looked up even offline.
    expect((await offline.verify('a@[10.0.6.1]')).verdict.reason).toBe('blocked_by_filter');

    const none = await withIpFilters([], () => 'block');
    expect((await none.verify('a@example.org')).verdict.reason).not.toBe('blocked_by_filter');
    expect(none.reads).toEqual(['email x1', 'domain x2', 'ip prefixes']);
    expect(none.dns.calls.filter((call) => call.startsWith('addresses'))).toEqual([]);
  });

  it('ranks matches of both families by size: an IPv4 host beats an IPv6 /33', async () => {
    const { verify } = await withIpFilters(
      ['2001:db8::/33', '203.0.113.25', '198.51.100.0/24', '2001:db8:7::25'],
      (value) => (value === '2001:db8::/33' || value === '198.51.100.0/24' ? 'block' : 'allow'),
    );
    // mx.dual: 203.0.113.25 (a /32 allow) and 2001:db8:9::25 (in a /33 block).
    expect((await verify('a@dual.example.net')).verdict.reason).toBe('allowed_by_filter');
    // mx1: 198.51.100.20 (in a /24 block); mx2: 2001:db8:7::25 (a /128 allow).
    expect((await verify('a@example.org')).verdict.reason).toBe('allowed_by_filter');
  });

  it('matches an IPv4-mapped IPv6 answer as the IPv4 address it carries', async () => {
    const { verify } = await withIpFilters(['192.0.2.0/24'], () => 'block');
    expect((await verify('a@mapped.example.net')).verdict.reason).toBe('blocked_by_filter');
    expect((await verify('a@[IPv6:::ffff:192.0.2.5]')).verdict.reason).toBe('blocked_by_filter');
  });

  it('reads the ranges of a set of mail hosts once per job run, however many domains share it', async () => {
    const { service, accountId, reads, dns } = await withIpFilters(
      ['198.51.100.0/24', '2001:db8:9::/48'],
      () => 'block',
    );
    const emails = [
      ...Array.from({ length: 20 }, (_, i) => `u${i}@example.org`),
      ...Array.from({ length: 20 }, (_, i) => `u${i}@hosted.example.net`),
      ...Array.from({ length: 20 }, (_, i) => `u${i}@dual.example.net`),
    ];
    const caller = { accountId };
    const { id } = await service.submitBatch(caller, { emails, method: 'quick' });
    await service.batchWork.idle();
    expect(await service.batchStatus(caller, id)).toMatchObject({
      status: 'completed',
      invalid: 60,
    });
    // Submission reads the email and domain filters; the run, the prefixes once and the
    // ranges of each set of mail host IPs once: a /24 or a /48 for each of two IPs
    // (example.org's two hosts, which hosted.example.net shares; dual.example.net's one host
    // of both families).
    expect(reads.filter((read) => read.startsWith('ip'))).toEqual([
      'ip prefixes',
      'ip_address x2',
      'ip_address x2',
    ]);
    expect(dns.calls.filter((call) => call.startsWith('addresses')).length).toBeGreaterThan(0);
  });
});
