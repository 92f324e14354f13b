import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';

/**
 * The engine's default resolver against lying resolvers on loopback (dns/canary-dns.ts): one that
 * answers NXDOMAIN for every name (a sandbox), one that answers an address for every name
 * (NXDOMAIN rewriting). Neither may turn into undeliverable or deliverable verdicts.
 */
const servers: TestDnsServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function engineOn(
  zone: Parameters<typeof startDnsServer>[0],
  otherwise: Parameters<typeof startDnsServer>[1],
  canary?: false,
) {
  const server = await startDnsServer(zone, otherwise);
  servers.push(server);
  const warnings: string[] = [];
  const engine = createEngine({
    dnsOptions: { servers: [server.address], timeoutMs: 2_000, tries: 1 },
    onWarning: (message) => warnings.push(message),
    ...(canary === false ? { dnsCanary: false as const } : {}),
  });
  return { engine, warnings, server };
}

const ADDRESSES = Array.from(
  { length: 40 },
  (_, i) => `user${i}@${['gmail.com', 'outlook.com', `company${i}.com`][i % 3]}`,
);

async function verifyAll(engine: ReturnType<typeof createEngine>) {
  const verdicts = [];
  for await (const { verdict } of engine.verifyMany(ADDRESSES, { method: 'quick' }))
    verdicts.push(verdict);
  return verdicts;
}

describe('a resolver that NXDOMAINs everything', () => {
  it('makes verdicts risky no_connect with dns_unavailable, never undeliverable, and is reported once', async () => {
    const { engine, warnings } = await engineOn({}, { rcode: 'NXDOMAIN' });
    const verdicts = await verifyAll(engine);
    for (const verdict of verdicts) {
      expect([verdict.state, verdict.reason]).toEqual(['risky', 'no_connect']);
      expect(verdict.riskFactors).toContain('dns_unavailable');
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/not answering truthfully/);
    expect(engine.dnsHealth()).toMatchObject({ status: 'lying', problem: 'denies_existing_names' });
  });

  it('is believed only when the canary is switched off', async () => {
    const { engine, warnings } = await engineOn({}, { rcode: 'NXDOMAIN' }, false);
    const verdict = await engine.verify('ann@gmail.com', { method: 'quick' });
    expect([verdict.state, verdict.reason]).toEqual(['undeliverable', 'invalid_domain']);
    expect(verdict.riskFactors).toEqual(['nxdomain']);
    expect(warnings).toEqual([]);
  });
});

describe('a resolver that answers an address for every name', () => {
  it('makes implicit-MX verdicts risky no_connect with dns_unavailable, reported once', async () => {
    const { engine, warnings } = await engineOn({}, { a: ['192.0.2.80'] });
    const verdicts = await verifyAll(engine);
    for (const verdict of verdicts) {
      expect([verdict.state, verdict.reason]).toEqual(['risky', 'no_connect']);
      expect(verdict.riskFactors).toContain('dns_unavailable');
    }
    expect(warnings).toHaveLength(1);
    expect(engine.dnsHealth()).toMatchObject({
      status: 'lying',
      problem: 'answers_nonexistent_names',
    });
  });
});

describe('a truthful resolver', () => {
  it('keeps NXDOMAIN as evidence: nxdomain, not no_mx', async () => {
    const { engine, warnings } = await engineOn(
      {
        'gmail.com': { mx: [{ exchange: 'gmail-smtp-in.l.google.com', preference: 5 }] },
        'outlook.com': {
          mx: [{ exchange: 'outlook-com.olc.protection.outlook.com', preference: 5 }],
        },
        'yahoo.com': { mx: [{ exchange: 'mta5.am0.yahoodns.net', preference: 1 }] },
      },
      { rcode: 'NXDOMAIN' },
    );
    expect(await engine.verify('ann@gmail.com', { method: 'quick' })).toMatchObject({
      state: 'deliverable',
    });
    const gone = await engine.verify('ann@no-such-company-here.com', { method: 'quick' });
    expect([gone.state, gone.reason]).toEqual(['undeliverable', 'invalid_domain']);
    expect(gone.riskFactors).toEqual(['nxdomain']);
    expect(warnings).toEqual([]);
    expect(engine.dnsHealth().status).toBe('healthy');
  });
});
