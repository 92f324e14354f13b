import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodeDns } from '../../src/adapters/node/dns.js';
import { createCachedDns } from '../../src/dns/cached-dns.js';
import { createEngine } from '../../src/compose/engine.js';
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
