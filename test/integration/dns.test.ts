import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodeDns, DNS_MAX_QUERIES_IN_FLIGHT } from '../../src/adapters/node/dns.js';
import { createCachedDns } from '../../src/dns/cached-dns.js';
import { createEngine } from '../../src/compose/engine.js';
import { VERIFY_MANY_CONCURRENCY } from '../../src/engine/verify-many.js';
import type { IpFilter } from '../../src/ports/ip-filter.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';

let server: TestDnsServer;

beforeAll(async () => {
  const zone: Parameters<typeof startDnsServer>[0] = {
    'mx.test-zone.com': {
      mx: [
        { exchange: 'mx2.mx.test-zone.com', preference: 20 },
        { exchange: 'mx1.mx.test-zone.com', preference: 10 },
      ],
    },
    'nullmx.test-zone.com': { mx: [{ exchange: '.', preference: 0 }] },
    'aonly.test-zone.com': { a: ['192.0.2.10'] },
    'v6only.test-zone.com': { aaaa: ['2001:db8::10'] },
    'empty.test-zone.com': {},
    'servfail.test-zone.com': { rcode: 'SERVFAIL' },
    'refused.test-zone.com': { rcode: 'REFUSED' },
    'silent.test-zone.com': { silent: true },
  };
  for (let i = 0; i < 10; i++)
    zone[`d${i}.test-zone.com`] = { mx: [{ exchange: `mx.d${i}.test-zone.com`, preference: 10 }] };
  server = await startDnsServer(zone);
});

afterAll(async () => {
  await server.close();
});

function dns(timeoutMs = 2000) {
  return createNodeDns({ servers: [server.address], timeoutMs, tries: 1 });
}

describe('node DNS adapter against a real DNS server on loopback', () => {
  it('returns MX hosts sorted by priority', async () => {
    expect(await dns().mx('mx.test-zone.com')).toEqual({
      kind: 'records',
      hosts: [
        { exchange: 'mx1.mx.test-zone.com', priority: 10 },
        { exchange: 'mx2.mx.test-zone.com', priority: 20 },
      ],
    });
  });

  it('recognizes a null MX (RFC 7505)', async () => {
    expect(await dns().mx('nullmx.test-zone.com')).toEqual({ kind: 'null_mx' });
  });

  it('falls back to the A or AAAA record as an implicit MX', async () => {
    expect(await dns().mx('aonly.test-zone.com')).toEqual({
      kind: 'implicit',
      host: 'aonly.test-zone.com',
    });
    expect(await dns().mx('v6only.test-zone.com')).toEqual({
      kind: 'implicit',
      host: 'v6only.test-zone.com',
    });
  });

  it('tells NXDOMAIN from a domain with no records', async () => {
    expect(await dns().mx('missing.test-zone.com')).toEqual({ kind: 'nxdomain' });
    expect(await dns().mx('empty.test-zone.com')).toEqual({ kind: 'no_records' });
  });

  it('maps SERVFAIL and REFUSED to failures, never to invalid', async () => {
    expect(await dns().mx('servfail.test-zone.com')).toEqual({ kind: 'failure', code: 'servfail' });
    expect(await dns().mx('refused.test-zone.com')).toEqual({ kind: 'failure', code: 'refused' });
  });

  it('answers a timeout within the configured deadline when the server is silent', async () => {
    const answer = await dns(300).mx('silent.test-zone.com');
    expect(answer).toEqual({ kind: 'failure', code: 'timeout' });
  });

  it('turns each DNS outcome into its verdict: invalid, deliverable or risky', async () => {
    const engine = createEngine({ dns: dns(300) });
    const verdicts = await Promise.all(
      ['mx', 'nullmx', 'aonly', 'missing', 'empty', 'servfail', 'silent'].map((d) =>
        engine.verify(`ann@${d}.test-zone.com`),
      ),
    );
    expect(verdicts.map((v) => [v.state, v.reason])).toEqual([
      ['deliverable', 'accepted_email'],
      ['undeliverable', 'invalid_domain'],
      ['deliverable', 'accepted_email'],
      ['undeliverable', 'invalid_domain'],
      ['undeliverable', 'invalid_domain'],
      ['risky', 'no_connect'],
      ['risky', 'timeout'],
    ]);
    expect(verdicts[0]?.mxRecord).toBe('mx1.mx.test-zone.com');
  });

  it('1,000 concurrent verifies over 10 domains ask at most 10 MX questions', async () => {
    const engine = createEngine({ dns: createCachedDns(dns()) });
    const before = server.questions.filter((q) => q.startsWith('MX d')).length;
    const verdicts = await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        engine.verify(`user${i}@d${i % 10}.test-zone.com`, { method: 'quick' }),
      ),
    );
    expect(verdicts.every((v) => v.state === 'deliverable')).toBe(true);
    const asked = server.questions.filter((q) => q.startsWith('MX d')).length - before;
    expect(asked).toBeGreaterThan(0);
    expect(asked).toBeLessThanOrEqual(10);
  });
});

describe('DNS queries in flight', () => {
  /** Domains of the run: one in ten has its mail host in 198.18.0.0/24, the blocked range. */
  const DOMAINS = 400;
  let slow: TestDnsServer;

  beforeAll(async () => {
    const zone: Parameters<typeof startDnsServer>[0] = {};
    for (let d = 0; d < DOMAINS; d++) {
      zone[`q${d}.test-zone.com`] = {
        mx: [{ exchange: `mx.q${d}.test-zone.com`, preference: 10 }],
      };
      zone[`mx.q${d}.test-zone.com`] = { a: [`198.18.${d % 10}.${Math.floor(d / 10)}`] };
    }
    zone['silent.test-zone.com'] = { silent: true };
    // Every answer waits: the questions of a run pile up at the server as they would on a
    // resolver with real latency, and the most unanswered at once is what the client had in
    // flight.
    slow = await startDnsServer(zone, { rcode: 'NXDOMAIN' }, 30);
  });
  afterAll(() => slow.close());

  const blockRange: IpFilter = {
    match: (ips) =>
      Promise.resolve(ips.some((ip) => ip.startsWith('198.18.0.')) ? 'block' : undefined),
  };

  /** The most queries in flight during a run over every domain, and its verdicts' reasons. */
  async function run(ipFilter: IpFilter | undefined) {
    // A fresh engine: nothing cached from the run before.
    const engine = createEngine({
      dnsOptions: { servers: [slow.address], timeoutMs: 10_000, tries: 1 },
      dnsCanary: false,
    });
    const addresses = Array.from(
      { length: DOMAINS * 3 },
      (_, i) => `u${i}@q${i % DOMAINS}.test-zone.com`,
    );
    slow.resetMostUnanswered();
    const reasons = new Map<string, number>();
    for await (const { verdict } of engine.verifyMany(addresses, {
      method: 'quick',
      ...(ipFilter === undefined ? {} : { ipFilter }),
    })) {
      reasons.set(verdict.reason, (reasons.get(verdict.reason) ?? 0) + 1);
    }
    return { inFlight: slow.mostUnanswered(), reasons: Object.fromEntries(reasons) };
  }

  it("a filtered run (MX, then the hosts' A and AAAA) stays within the bound of an unfiltered one", async () => {
    const plain = await run(undefined);
    expect(plain.reasons).toEqual({ accepted_email: DOMAINS * 3 });
    const filtered = await run(blockRange);
    // The filter still matches each blocked domain's MX host by its address.
    expect(filtered.reasons).toEqual({
      accepted_email: (DOMAINS * 3 * 9) / 10,
      blocked_by_filter: (DOMAINS * 3) / 10,
    });
    // Many domains at once, never one at a time...
    expect(plain.inFlight).toBeGreaterThan(VERIFY_MANY_CONCURRENCY);
    // ...and the resolver's bound whether the run asks one question of a domain or three.
    expect(plain.inFlight).toBeLessThanOrEqual(DNS_MAX_QUERIES_IN_FLIGHT);
    expect(filtered.inFlight).toBeLessThanOrEqual(DNS_MAX_QUERIES_IN_FLIGHT);
  });

  const mxOf = (d: number) => ({
    kind: 'records',
    hosts: [{ exchange: `mx.q${d}.test-zone.com`, priority: 10 }],
  });

  it('sends at most maxQueriesInFlight at once; the rest wait their turn, in order, and are answered', async () => {
    const dns = createNodeDns({ servers: [slow.address], maxQueriesInFlight: 5 });
    const before = slow.questions.length;
    slow.resetMostUnanswered();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, d) => dns.mx(`q${d}.test-zone.com`)),
    );
    expect(answers).toEqual(Array.from({ length: 40 }, (_, d) => mxOf(d)));
    expect(slow.mostUnanswered()).toBeLessThanOrEqual(5);
    expect(slow.questions.slice(before)).toEqual(
      Array.from({ length: 40 }, (_, d) => `MX q${d}.test-zone.com`),
    );
  });

  it('never sends the query of a lookup whose caller gave up while it waited', async () => {
    const dns = createNodeDns({ servers: [slow.address], maxQueriesInFlight: 1 });
    const before = slow.questions.length;
    const first = dns.mx('q1.test-zone.com');
    const controller = new AbortController();
    const abandoned = dns.mx('q2.test-zone.com', controller.signal);
    const last = dns.mx('q3.test-zone.com');
    controller.abort(new Error('gone'));
    await expect(abandoned).rejects.toThrow('gone');
    expect([await first, await last]).toEqual([mxOf(1), mxOf(3)]);
    // The slot went from the first lookup to the last: the abandoned one was skipped.
    expect(slow.questions.slice(before)).toEqual(['MX q1.test-zone.com', 'MX q3.test-zone.com']);
  });

  it('a lookup waiting behind a silent server answers a timeout by its own deadline', async () => {
    const dns = createNodeDns({
      servers: [slow.address],
      maxQueriesInFlight: 1,
      timeoutMs: 300,
      tries: 1,
    });
    const silent = dns.mx('silent.test-zone.com');
    const waiting = dns.mx('q4.test-zone.com');
    expect(await waiting).toEqual({ kind: 'failure', code: 'timeout' });
    expect(await silent).toEqual({ kind: 'failure', code: 'timeout' });
  });

  it('refuses a maxQueriesInFlight that is not a whole number from 1, naming the option', () => {
    expect(() => createNodeDns({ maxQueriesInFlight: 0 })).toThrow(/maxQueriesInFlight/);
    expect(() => createNodeDns({ maxQueriesInFlight: 2.5 })).toThrow(/maxQueriesInFlight/);
    expect(() => createNodeDns({ maxQueriesInFlight: Number.NaN })).toThrow(/maxQueriesInFlight/);
  });
});
