import { describe, expect, it } from 'vitest';
import { parseAddress } from '../../src/address/parse.js';
import { createCachedDns } from '../../src/dns/cached-dns.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { createEngine } from '../../src/compose/engine.js';
import { freeVerdict, isFree } from '../../src/engine/free-verdict.js';
import type { IpFilter } from '../../src/ports/ip-filter.js';
import type { FilterAction } from '../../src/ports/store.js';
import { createMemorySmtp } from '../../src/smtp/memory-smtp.js';
import { countingDns, countingSmtp } from '../helpers/fakes.js';
import { eventually } from '../helpers/waiting.js';

/** An IpFilter over a table of single addresses, recording what it is asked about. */
function tableFilter(actions: Record<string, FilterAction>): IpFilter & { asked: string[][] } {
  const asked: string[][] = [];
  return {
    asked,
    match(ips) {
      asked.push([...ips]);
      const found = ips.map((ip) => actions[ip]).find((action) => action !== undefined);
      return Promise.resolve(found);
    },
  };
}

const zones = {
  'four.example.org': [
    'mx1.four.example.org',
    'mx2.four.example.org',
    'mx3.four.example.org',
    'mx4.four.example.org',
  ],
  'plain.example.org': ['mx.plain.example.org'],
};
const hosts = {
  'mx1.four.example.org': ['192.0.2.1'],
  'mx2.four.example.org': ['2001:db8::2'],
  'mx3.four.example.org': ['192.0.2.3'],
  'mx4.four.example.org': ['192.0.2.4'],
  'mx.plain.example.org': ['198.51.100.9'],
};

function online() {
  const dns = countingDns(createMemoryDns(zones, hosts));
  const smtp = countingSmtp(createMemorySmtp({ catchAllDomains: [] }));
  return { dns, smtp, engine: createEngine({ dns, smtp }) };
}

describe('the ipFilter option of verify', () => {
  it("asks about the first three MX hosts' addresses once the mx check passed; a match skips the rest", async () => {
    const { engine, dns, smtp } = online();
    const ipFilter = tableFilter({ '192.0.2.3': 'block' });
    const verdict = await engine.verify('ann@four.example.org', { method: 'smtp', ipFilter });
    expect(ipFilter.asked).toEqual([['192.0.2.1', '2001:db8::2', '192.0.2.3']]);
    expect(dns.calls).toEqual([
      'mx four.example.org',
      'addresses mx1.four.example.org',
      'addresses mx2.four.example.org',
      'addresses mx3.four.example.org',
    ]);
    expect(smtp.calls).toEqual([]);
    const parsed = parseAddress('ann@four.example.org');
    // The verdict a filter match gives wherever it is matched: the one free-verdict rule.
    expect(verdict).toEqual(
      freeVerdict('ann@four.example.org', parsed, 'smtp', () => 'block' as const),
    );
    expect(verdict).toMatchObject({
      state: 'undeliverable',
      reason: 'blocked_by_filter',
      score: 0,
      checks: [],
      testAddress: false,
      disposable: null,
    });
  });

  it('goes on with the checks when nothing matches, to the verdict it gives without a filter', async () => {
    const { engine, smtp } = online();
    const ipFilter = tableFilter({});
    const filtered = await engine.verify('bob@plain.example.org', { method: 'smtp', ipFilter });
    expect(ipFilter.asked).toEqual([['198.51.100.9']]);
    expect(smtp.calls).toHaveLength(1);
    const plain = await engine.verify('bob@plain.example.org', { method: 'smtp' });
    expect({ ...filtered, duration: 0 }).toEqual({ ...plain, duration: 0 });
  });

  it('is not asked when the mx check finds no mail host, nor about a test address', async () => {
    const { engine, dns } = online();
    const ipFilter = tableFilter({});
    expect((await engine.verify('a@nowhere.example.org', { ipFilter })).reason).toBe(
      'invalid_domain',
    );
    expect((await engine.verify('deliverable@example.com', { ipFilter })).testAddress).toBe(true);
    expect(ipFilter.asked).toEqual([]);
    expect(dns.calls).toEqual(['mx nowhere.example.org']);
  });

  it("asks about a domain literal's own address, offline too; offline, nothing else", async () => {
    const engine = createEngine({ offline: true, parse: { allowDomainLiteral: true } });
    const ipFilter = tableFilter({ '192.0.2.55': 'allow' });
    const literal = await engine.verify('x@[192.0.2.55]', { method: 'quick', ipFilter });
    expect(literal.reason).toBe('allowed_by_filter');
    const v6 = await engine.verify('x@[IPv6:2001:DB8::7]', { method: 'quick', ipFilter });
    expect(v6.reason).not.toBe('allowed_by_filter');
    const named = await engine.verify('x@plain.example.org', { method: 'quick', ipFilter });
    expect(named.reason).not.toBe('allowed_by_filter');
    expect(ipFilter.asked).toEqual([['192.0.2.55'], ['2001:db8::7']]);
  });

  it('answers with the same verdicts in verifyMany, each address at its index', async () => {
    const { engine } = online();
    const ipFilter = tableFilter({ '198.51.100.9': 'block' });
    const addresses = ['a@four.example.org', 'b@plain.example.org', 'c@plain.example.org'];
    const reasons: string[] = [];
    for await (const { index, verdict } of engine.verifyMany(addresses, {
      method: 'quick',
      ipFilter,
    })) {
      reasons[index] = verdict.reason;
    }
    expect(reasons).toEqual(['accepted_email', 'blocked_by_filter', 'blocked_by_filter']);
  });
});

describe('a bad ipFilter', () => {
  it('is a TypeError at the call, before any lookup', async () => {
    const { engine, dns } = online();
    const notAFilter = { matches: () => Promise.resolve(undefined) } as unknown as IpFilter;
    await expect(engine.verify('a@plain.example.org', { ipFilter: notAFilter })).rejects.toThrow(
      /verify's ipFilter must be an object with a match\(ips, signal\) method/,
    );
    expect(() => engine.verifyMany(['a@plain.example.org'], { ipFilter: notAFilter })).toThrow(
      TypeError,
    );
    expect(dns.calls).toEqual([]);
  });

  it('rejects the verification with a TypeError naming an answer that is no action', async () => {
    const { engine } = online();
    const ipFilter = { match: () => Promise.resolve('deny') } as unknown as IpFilter;
    await expect(engine.verify('a@plain.example.org', { ipFilter })).rejects.toThrow(
      /A filter answered "deny": expected 'block', 'allow' or undefined/,
    );
  });
});

describe('verifyMany with an IP filter', () => {
  it('asks the filter once per domain of a run, however many of its addresses it verifies', async () => {
    const { engine } = online();
    const ipFilter = tableFilter({ '198.51.100.9': 'block' });
    const addresses = Array.from({ length: 60 }, (_, i) =>
      i % 2 === 0 ? `u${i}@plain.example.org` : `u${i}@four.example.org`,
    );
    for (let run = 1; run <= 2; run++) {
      const reasons = new Map<string, number>();
      for await (const { verdict } of engine.verifyMany(addresses, { method: 'quick', ipFilter })) {
        reasons.set(verdict.reason, (reasons.get(verdict.reason) ?? 0) + 1);
      }
      expect(Object.fromEntries(reasons)).toEqual({ blocked_by_filter: 30, accepted_email: 30 });
      // Each run asks afresh: a filter changed between runs is heard.
      expect(ipFilter.asked).toHaveLength(2 * run);
    }
  });

  it("looks up the next domains' mail host addresses ahead of their turn, as it does their MX", async () => {
    const domains = 12;
    const table: Record<string, string[]> = {};
    const ips: Record<string, string[]> = {};
    for (let d = 0; d < domains; d++) {
      table[`d${d}.example.org`] = [`mx.d${d}.example.org`];
      ips[`mx.d${d}.example.org`] = [`192.0.2.${d}`];
    }
    const inner = createMemoryDns(table, ips);
    // The first domain's host never answers until the test says so.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const asked: string[] = [];
    const dns = createCachedDns({
      mx: (domain, signal) => inner.mx(domain, signal),
      async addresses(host, signal) {
        asked.push(host);
        if (host === 'mx.d0.example.org') await gate;
        return inner.addresses(host, signal);
      },
    });
    const engine = createEngine({ dns });
    const addresses = Array.from(
      { length: domains * 2 },
      (_, i) => `u${i}@d${i % domains}.example.org`,
    );
    const run = engine.verifyMany(addresses, {
      method: 'quick',
      concurrency: 1,
      ipFilter: tableFilter({ '192.0.2.5': 'block' }),
    });
    const first = run.next();
    // One domain verifies at a time, and it waits: the next domains' host addresses are asked
    // about meanwhile, read ahead with their MX.
    await eventually(
      () => asked.includes('mx.d0.example.org') && asked.length > 1,
      'host addresses of the next domains looked up while the first waits',
    );
    release();
    await first;
    const reasons: string[] = [];
    for await (const { verdict } of run) reasons.push(verdict.reason);
    expect(reasons.filter((reason) => reason === 'blocked_by_filter')).toHaveLength(2);
  });
});

describe('freeVerdict: the one rule for a verdict given without checks or charge', () => {
  const parsed = (address: string) => parseAddress(address);

  it('answers a test address first, without asking the filter', () => {
    let asked = 0;
    const verdict = freeVerdict('Risky@Example.com', parsed('Risky@Example.com'), 'quick', () => {
      asked++;
      return 'block';
    });
    expect(verdict).toMatchObject({ reason: 'low_deliverability', testAddress: true });
    expect(asked).toBe(0);
    expect(isFree(verdict as NonNullable<typeof verdict>)).toBe(true);
  });

  it("then the filter's action, at once or once it answers; nothing for neither", async () => {
    const address = 'ann@example.org';
    expect(freeVerdict(address, parsed(address), 'standard', () => 'allow')).toMatchObject({
      state: 'deliverable',
      reason: 'allowed_by_filter',
      score: 100,
      method: 'standard',
      testAddress: false,
    });
    const later = freeVerdict(address, parsed(address), 'quick', () =>
      Promise.resolve('block' as const),
    );
    expect(later).toBeInstanceOf(Promise);
    const blocked = await later;
    expect(blocked).toMatchObject({ reason: 'blocked_by_filter' });
    expect(isFree(blocked as NonNullable<typeof blocked>)).toBe(true);
    expect(freeVerdict(address, parsed(address), 'quick', () => undefined)).toBeUndefined();
    expect(freeVerdict(address, parsed(address), 'quick')).toBeUndefined();
  });

  it('gives nothing for an address that does not parse, without asking the filter', () => {
    let asked = 0;
    const free = freeVerdict('not an address', parsed('not an address'), 'quick', () => {
      asked++;
      return 'block';
    });
    expect(free).toBeUndefined();
    expect(asked).toBe(0);
  });

  it('gives each answer a list of its own', () => {
    const address = 'undeliverable@example.com';
    const first = freeVerdict(address, parsed(address), 'quick');
    const second = freeVerdict(address, parsed(address), 'quick');
    expect(first?.riskFactors).toEqual(['smtp_rejected']);
    expect(first?.riskFactors).not.toBe(second?.riskFactors);
  });
});
