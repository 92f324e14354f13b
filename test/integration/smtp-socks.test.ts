import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import type { Verdict } from '../../src/engine/verdict.js';
import { createNodeSmtp, type NodeSmtpOptions } from '../../src/adapters/node/smtp.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { startLineServer, type LineServer } from '../helpers/line-smtp-server.js';
import { startScriptedServer, type ScriptedServer } from '../helpers/smtp-server.js';
import {
  startSocksServer,
  type SocksServer,
  type SocksServerOptions,
} from '../helpers/socks-server.js';

/**
 * SMTP probes through a SOCKS5 proxy on loopback: the same verdicts as without it, the proxy's
 * own failures as unknown (never the mailbox's answer), the per-proxy limit, load spread over
 * proxies, and the CONNECT target always the IP the target policy checked.
 */
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function proxy(options?: SocksServerOptions): Promise<SocksServer> {
  const server = await startSocksServer(options);
  closers.push(() => server.close());
  return server;
}

/** Mailboxes a@..d@ exist at example.org; every address at anything.org is taken. */
async function lineServer(): Promise<LineServer> {
  const server = await startLineServer((command) => {
    if (!command.startsWith('RCPT')) return null;
    const address = command.slice(command.indexOf('<') + 1, command.lastIndexOf('>'));
    return /^[a-d]@/.test(address) || address.endsWith('@anything.org')
      ? '250 2.1.5 Ok\r\n'
      : `550 5.1.1 <${address}>: Recipient address rejected: User unknown\r\n`;
  });
  closers.push(() => server.close());
  return server;
}

const url = (server: SocksServer, credentials = '') =>
  `socks5://${credentials}127.0.0.1:${server.port}`;

function engineFor(port: number, smtpOptions: Partial<NodeSmtpOptions> = {}) {
  return createEngine({
    dns: createMemoryDns(
      { 'example.org': ['mx.example.net'], 'anything.org': ['mx.example.net'] },
      { 'mx.example.net': ['127.0.0.1'] },
    ),
    smtpOptions: {
      port,
      allowPrivateNetworks: true,
      heloName: 'probe.example.net',
      mailFrom: 'verify@example.net',
      connectTimeoutMs: 500,
      bannerTimeoutMs: 1_000,
      commandTimeoutMs: 1_000,
      sessionDeadlineMs: 3_000,
      ...smtpOptions,
    },
  });
}

async function verifyAll(
  port: number,
  addresses: readonly string[],
  smtpOptions: Partial<NodeSmtpOptions> = {},
): Promise<Verdict[]> {
  const verdicts: Verdict[] = [];
  const engine = engineFor(port, smtpOptions);
  for await (const { index, verdict } of engine.verifyMany(addresses, { method: 'smtp' })) {
    verdicts[index] = verdict;
  }
  return verdicts;
}

/** Waits (bounded) for every socket of these servers to close, then says none is open. */
async function expectAllClosed(...servers: Array<{ open: () => number }>): Promise<void> {
  const open = () => servers.reduce((sum, server) => sum + server.open(), 0);
  for (let i = 0; i < 100 && open() > 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(open(), 'no socket is left open').toBe(0);
}

const stateAndReason = (verdicts: readonly Verdict[]) =>
  verdicts.map((v) => [v.email, v.state, v.reason]);

const ADDRESSES = ['a@example.org', 'x@example.org', 'b@example.org', 'z@anything.org'];

function expectOnlyCheckedTargets(server: SocksServer, port: number): void {
  expect(server.targets.length).toBeGreaterThan(0);
  for (const target of server.targets) {
    expect(target).toEqual({ atyp: 1, host: '127.0.0.1', port });
  }
}

describe('SMTP through a SOCKS5 proxy', () => {
  it('gives the same verdicts as a direct connection: accepted, rejected, catch-all', async () => {
    const smtp = await lineServer();
    const socks = await proxy();
    const direct = await verifyAll(smtp.port, ADDRESSES);
    const proxied = await verifyAll(smtp.port, ADDRESSES, { proxies: [url(socks)] });
    expect(stateAndReason(proxied)).toEqual(stateAndReason(direct));
    expect(stateAndReason(proxied)).toEqual([
      ['a@example.org', 'deliverable', 'accepted_email'],
      ['x@example.org', 'undeliverable', 'rejected_email'],
      ['b@example.org', 'deliverable', 'accepted_email'],
      ['z@anything.org', 'risky', 'low_deliverability'],
    ]);
    expect(socks.connections()).toBeGreaterThan(0);
    expectOnlyCheckedTargets(socks, smtp.port);
    await expectAllClosed(smtp, socks);
  });

  it('upgrades to TLS with STARTTLS over the proxied socket', async () => {
    const smtp: ScriptedServer = await startScriptedServer({
      mailboxes: { 'ann@example.org': 'accept' },
      server: { hideSTARTTLS: false },
    });
    closers.push(() => smtp.close());
    const socks = await proxy();
    const [verdict] = await verifyAll(smtp.port, ['ann@example.org'], { proxies: [url(socks)] });
    expect([verdict?.state, verdict?.reason]).toEqual(['deliverable', 'accepted_email']);
    expect(smtp.tlsSessions()).toBeGreaterThan(0);
    expectOnlyCheckedTargets(socks, smtp.port);
    await expectAllClosed(socks);
  });

  it('authenticates with percent-encoded user:pass (RFC 1929)', async () => {
    const smtp = await lineServer();
    const socks = await proxy({ auth: { user: 'pro@be', password: 'p:ss w/rd%' } });
    const [verdict] = await verifyAll(smtp.port, ['a@example.org'], {
      proxies: [url(socks, 'pro%40be:p%3Ass%20w%2Frd%25@')],
    });
    expect([verdict?.state, verdict?.reason]).toEqual(['deliverable', 'accepted_email']);
    expect(socks.authFailures()).toBe(0);
    await expectAllClosed(smtp, socks);
  });

  it('wrong credentials: risky no_connect, the mailbox server never reached', async () => {
    const smtp = await lineServer();
    const socks = await proxy({ auth: { user: 'probe', password: 'right' } });
    const [verdict] = await verifyAll(smtp.port, ['x@example.org'], {
      proxies: [url(socks, 'probe:wrong@')],
    });
    expect([verdict?.state, verdict?.reason]).toEqual(['risky', 'no_connect']);
    expect(socks.authFailures()).toBeGreaterThan(0);
    expect(smtp.connections()).toBe(0);
    await expectAllClosed(smtp, socks);
  });

  it.each([
    ['general failure', 1],
    ['not allowed by ruleset', 2],
    ['connection refused', 5],
  ])('a proxy that refuses CONNECT (%s) gives risky no_connect', async (_name, refuse) => {
    const smtp = await lineServer();
    const socks = await proxy({ mode: { refuse } });
    const [verdict] = await verifyAll(smtp.port, ['x@example.org'], { proxies: [url(socks)] });
    expect([verdict?.state, verdict?.reason]).toEqual(['risky', 'no_connect']);
    expect(smtp.connections()).toBe(0);
    await expectAllClosed(smtp, socks);
  });

  it('a proxy that is down gives risky no_connect', async () => {
    const smtp = await lineServer();
    const socks = await startSocksServer();
    await socks.close();
    const [verdict] = await verifyAll(smtp.port, ['x@example.org'], { proxies: [url(socks)] });
    expect([verdict?.state, verdict?.reason]).toEqual(['risky', 'no_connect']);
    expect(smtp.connections()).toBe(0);
  });

  it('a proxy that stalls gives risky timeout, with no socket left open', async () => {
    const smtp = await lineServer();
    const socks = await proxy({ mode: 'stall' });
    const [verdict] = await verifyAll(smtp.port, ['x@example.org'], { proxies: [url(socks)] });
    expect([verdict?.state, verdict?.reason]).toEqual(['risky', 'timeout']);
    expect(smtp.connections()).toBe(0);
    await expectAllClosed(smtp, socks);
  });

  it('a general failure of one proxy tries the next proxy once', async () => {
    const smtp = await lineServer();
    const broken = await proxy({ mode: { refuse: 1 } });
    const good = await proxy();
    const verdicts = await verifyAll(smtp.port, ['a@example.org', 'x@example.org'], {
      proxies: [url(broken), url(good)],
      recipientsPerSession: 1,
    });
    expect(stateAndReason(verdicts)).toEqual([
      ['a@example.org', 'deliverable', 'accepted_email'],
      ['x@example.org', 'undeliverable', 'rejected_email'],
    ]);
    expect(broken.connections()).toBeGreaterThan(0);
    await expectAllClosed(smtp, broken, good);
  });

  it('holds maxConnectionsPerProxy', async () => {
    const smtp = await lineServer();
    const socks = await proxy();
    const addresses = ['a', 'b', 'c', 'd', 'w', 'x', 'y', 'z'].map((l) => `${l}@example.org`);
    const verdicts = await verifyAll(smtp.port, addresses, {
      proxies: [url(socks)],
      maxConnectionsPerProxy: 2,
      maxConnectionsPerHost: 10,
      recipientsPerSession: 1,
    });
    expect(verdicts.map((v) => v.state)).toEqual([
      ...Array<string>(4).fill('deliverable'),
      ...Array<string>(4).fill('undeliverable'),
    ]);
    expect(socks.connections()).toBeGreaterThanOrEqual(addresses.length);
    expect(socks.maxConcurrent()).toBeLessThanOrEqual(2);
    await expectAllClosed(smtp, socks);
  });

  it('spreads sessions over two proxies', async () => {
    const smtp = await lineServer();
    const first = await proxy();
    const second = await proxy();
    const addresses = ['a', 'b', 'c', 'w', 'x', 'y'].map((l) => `${l}@example.org`);
    await verifyAll(smtp.port, addresses, {
      proxies: [url(first), url(second)],
      maxConnectionsPerProxy: 1,
      recipientsPerSession: 1,
    });
    expect(first.connections()).toBeGreaterThan(0);
    expect(second.connections()).toBeGreaterThan(0);
    expect(first.maxConcurrent()).toBe(1);
    expect(second.maxConcurrent()).toBe(1);
    expectOnlyCheckedTargets(first, smtp.port);
    expectOnlyCheckedTargets(second, smtp.port);
    await expectAllClosed(smtp, first, second);
  });

  it('refuses a private target before the proxy is asked, unless allowPrivateNetworks', async () => {
    const smtp = await lineServer();
    const socks = await proxy();
    const [verdict] = await verifyAll(smtp.port, ['a@example.org'], {
      proxies: [url(socks)],
      allowPrivateNetworks: false,
    });
    expect([verdict?.state, verdict?.reason]).toEqual(['risky', 'no_connect']);
    expect(socks.connections()).toBe(0);
    expect(smtp.connections()).toBe(0);
  });

  it('checks the proxy URLs when the prober is created', () => {
    const options = { heloName: 'probe.example.net', mailFrom: 'verify@example.net' };
    expect(() =>
      createNodeSmtp({ ...options, proxies: ['socks5://127.0.0.1:1080'] }),
    ).not.toThrow();
    expect(() => createNodeSmtp({ ...options, proxies: ['http://127.0.0.1:1080'] })).toThrow(
      TypeError,
    );
    expect(() => createNodeSmtp({ ...options, proxies: ['socks5://u:secret@127.0.0.1'] })).toThrow(
      /socks5:\/\/u:\*\*\*@127\.0\.0\.1.*no port/,
    );
  });
});
