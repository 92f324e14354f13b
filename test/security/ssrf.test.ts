import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Resolver } from 'node:dns/promises';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createNodeSmtp } from '../../src/adapters/node/smtp.js';
import { createNodeWebhookSender } from '../../src/adapters/node/webhook.js';
import { createEngine } from '../../src/compose/engine.js';
import { requireCallbackUrl } from '../../src/service/batch/callback-url.js';
import { ServiceError } from '../../src/service/service-error.js';
import { isPublicAddress } from '../../src/smtp/target-policy.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';
import { fcParams } from '../helpers/fast-check.js';

/**
 * Hostile SSRF inputs: every address form that reaches our own network, as MX targets, domain
 * literals and webhook callback URLs. A refusal is proved without connecting anywhere: every
 * socket connect is intercepted (recorded and failed before any packet leaves), so a guard
 * that let one through shows up as a recorded attempt, never as traffic.
 */

/** Addresses no probe or webhook may reach: loopback, private, reserved, and wrappers of them. */
const NON_PUBLIC: ReadonlyArray<readonly [string, string]> = [
  ['IPv4 loopback', '127.0.0.1'],
  ['IPv4 loopback, elsewhere in 127/8', '127.255.0.9'],
  ['unspecified', '0.0.0.0'],
  ['this network', '0.1.2.3'],
  ['RFC 1918 10/8', '10.0.0.1'],
  ['RFC 1918 172.16/12', '172.31.255.254'],
  ['RFC 1918 192.168/16', '192.168.0.1'],
  ['CGNAT 100.64/10', '100.64.0.1'],
  ['CGNAT 100.64/10, top', '100.127.255.254'],
  ['link-local (cloud metadata)', '169.254.169.254'],
  ['IETF protocol assignments', '192.0.0.8'],
  ['benchmarking', '198.19.0.1'],
  ['documentation', '203.0.113.9'],
  ['multicast', '239.255.255.250'],
  ['reserved 240/4', '240.0.0.1'],
  ['broadcast', '255.255.255.255'],
  ['IPv6 loopback', '::1'],
  ['IPv6 unspecified', '::'],
  ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
  ['IPv4-mapped loopback, hex', '::ffff:7f00:1'],
  ['IPv4-mapped private', '::ffff:10.0.0.1'],
  ['IPv4-mapped metadata', '::ffff:a9fe:a9fe'],
  ['IPv4-compatible loopback (deprecated ::/96)', '::7f00:1'],
  ['IPv4-compatible loopback, dotted', '::127.0.0.1'],
  ['IPv4-compatible private', '::a00:1'],
  ['IPv4-compatible public (still ::/96, not global unicast)', '::808:808'],
  ['IPv4-translated (RFC 6145)', '::ffff:0:7f00:1'],
  ['NAT64 of loopback', '64:ff9b::7f00:1'],
  ['NAT64 of private', '64:ff9b::a00:1'],
  ['NAT64 local-use prefix (RFC 8215), public-looking tail', '64:ff9b:1:7f00:0:100:808:808'],
  ['NAT64 local-use prefix (RFC 8215)', '64:ff9b:1::a00:1'],
  ['6to4 of loopback', '2002:7f00:1::'],
  ['6to4 of private', '2002:c0a8:101::1'],
  ['Teredo', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
  ['unique local fc00::/7', 'fc00::1'],
  ['unique local fd00::/8', 'fd12:3456::1'],
  ['link-local fe80::/10', 'fe80::1'],
  ['link-local fe80::/10, top', 'febf::1'],
  ['site-local (deprecated)', 'fec0::1'],
  ['multicast ff00::/8', 'ff02::1'],
  ['discard-only 100::/64', '100::1'],
  ['documentation 2001:db8::/32', '2001:db8::1'],
  ['documentation 3fff::/20', '3fff::1'],
  ['reserved ::/8 outside the mapped forms', '::2'],
  ['unallocated 4000::/3 (not global unicast 2000::/3)', '4000::1'],
  ['reserved 1::/16', '1::1'],
];

const PUBLIC: readonly string[] = [
  '8.8.8.8',
  '1.1.1.1',
  '2001:4860:4860::8888',
  '2606:4700:4700::1111',
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
  '2002:808:808::1',
];

/** Socket connects, intercepted: recorded and failed before anything is sent. */
let connects: string[] = [];
beforeEach(() => {
  connects = [];
  const original = net.Socket.prototype.connect;
  vi.spyOn(net.Socket.prototype, 'connect').mockImplementation(function (
    this: net.Socket,
    ...args: unknown[]
  ) {
    // net.createConnection hands connect its normalized arguments as one array.
    const [first, second] = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
    const target = connectTarget(first, second);
    connects.push(target);
    // Only our own loopback test servers are ever really connected to.
    if (/^(?:127\.0\.0\.1|localhost):/.test(target) && allowLoopback) {
      return original.apply(this, args as never);
    }
    process.nextTick(() =>
      this.destroy(Object.assign(new Error(`blocked ${target}`), { code: 'ECONNREFUSED' })),
    );
    return this;
  });
});
afterEach(() => {
  vi.restoreAllMocks();
  allowLoopback = false;
});
let allowLoopback = false;

/**
 * `host:port` a connect call would reach. A host name with a `lookup` option (the webhook
 * sender's pinned answer, which calls back at once) is what that lookup answers; a name any
 * other lookup would resolve stays a name, and is blocked.
 */
function connectTarget(first: unknown, second: unknown): string {
  if (typeof first !== 'object' || first === null) return `${String(second)}:${String(first)}`;
  const options = first as { host?: string; port?: number; lookup?: net.LookupFunction };
  let host = String(options.host);
  if (typeof options.lookup === 'function' && net.isIP(host) === 0) {
    options.lookup(host, {}, (error, address) => {
      if (error === null && typeof address === 'string') host = address;
    });
  }
  return `${host}:${String(options.port)}`;
}

describe('isPublicAddress', () => {
  it.each(NON_PUBLIC)('refuses %s (%s)', (_kind, address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(PUBLIC)('allows the global unicast address %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it.each([
    '2130706433',
    '0x7f.1',
    '017700000001',
    '127.1',
    '0',
    'localhost',
    '',
    'mx.example',
    // Spellings of 8.8.8.8 that node:net and a SOCKS proxy would resolve as names again.
    '134744072',
    '0x8.0x8.0x8.0x8',
    '8.8.8.010',
    '8.8.2056',
    ' 8.8.8.8',
    '8.8.8.8 ',
  ])('refuses %s, a spelling or a name that is not a plain public address', (address) =>
    expect(isPublicAddress(address)).toBe(false),
  );
});

/** IPv4 ranges that are never the public internet (RFC 6890 and friends). */
const REFUSED_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
];
/** IPv6 ranges that are never the public internet, wrappers of IPv4 aside. */
const REFUSED_V6 = [
  '::/96',
  '::ffff:0:0:0/96',
  '64:ff9b:1::/48',
  '100::/64',
  '2001::/23',
  '2001:db8::/32',
  '3fff::/20',
  '0:0:1::/48',
  '1::/16',
  '4000::/2',
  '8000::/1',
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
];

const v4In = (cidr: string) => {
  const [network, bits] = ipaddr.IPv4.parseCIDR(cidr);
  const base = network.toByteArray().reduce((value, byte) => value * 256 + byte, 0);
  return fc.integer({ min: 0, max: 2 ** (32 - bits) - 1 }).map((host) => {
    const value = base + host;
    return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
  });
};
const v6In = (cidr: string) => {
  const [network, bits] = ipaddr.IPv6.parseCIDR(cidr);
  return fc
    .array(fc.integer({ min: 0, max: 255 }), { minLength: 16, maxLength: 16 })
    .map((random) => {
      const bytes = network.toByteArray().map((byte, index) => {
        const kept = Math.max(0, Math.min(8, bits - index * 8));
        const mask = (0xff << (8 - kept)) & 0xff;
        return (byte & mask) | ((random[index] ?? 0) & ~mask & 0xff);
      });
      return ipaddr.fromByteArray(bytes).toString();
    });
};
const hex = (a: number, b: number) => ((a << 8) | b).toString(16);
const wrappers = (v4: string): string[] => {
  const [a = 0, b = 0, c = 0, d = 0] = v4.split('.').map(Number);
  return [
    `::ffff:${v4}`,
    `::ffff:${hex(a, b)}:${hex(c, d)}`,
    `64:ff9b::${hex(a, b)}:${hex(c, d)}`,
    `64:ff9b::${v4}`,
    `2002:${hex(a, b)}:${hex(c, d)}::1`,
    `::${v4}`,
  ];
};

describe('isPublicAddress, over whole ranges', () => {
  it('refuses every address of the non-public IPv4 ranges, and every IPv6 form of one', () => {
    fc.assert(
      fc.property(fc.oneof(...REFUSED_V4.map(v4In)), (v4) => {
        expect(isPublicAddress(v4)).toBe(false);
        for (const wrapped of wrappers(v4)) expect(isPublicAddress(wrapped)).toBe(false);
      }),
      fcParams(),
    );
  });

  it('refuses every address of the non-public IPv6 ranges', () => {
    fc.assert(
      fc.property(fc.oneof(...REFUSED_V6.map(v6In)), (v6) => {
        expect(isPublicAddress(v6)).toBe(false);
      }),
      fcParams(),
    );
  });
});

describe('SMTP prober: MX targets and domain literals', () => {
  const recipient = { address: 'user@example.org', smtpUtf8: false };
  const prober = (resolveHost: (host: string) => readonly string[], resolved: string[] = []) =>
    createNodeSmtp({
      heloName: 'probe.example.net',
      mailFrom: 'probe@example.net',
      port: 2525,
      resolveHost: async (host) => {
        resolved.push(host);
        return resolveHost(host);
      },
      onWarning: () => undefined,
    });

  it.each(NON_PUBLIC)(
    'never connects to an MX host resolving to %s (%s)',
    async (_kind, address) => {
      const report = await prober(() => [address]).probe({
        domain: 'example.org',
        hosts: ['mx.example.org'],
        recipients: [recipient],
      });
      expect(report.connections).toBe(0);
      expect(connects).toEqual([]);
      expect(report.recipients[0]?.class).toBe('no_connect');
    },
  );

  it.each(NON_PUBLIC.filter(([, address]) => !address.includes(':')))(
    'never connects to the domain literal [%s] (%s)',
    async (_kind, address) => {
      const resolved: string[] = [];
      const report = await prober(() => ['8.8.8.8'], resolved).probe({
        domain: `[${address}]`,
        hosts: [`[${address}]`],
        recipients: [{ address: `user@[${address}]`, smtpUtf8: false }],
      });
      expect(report.connections).toBe(0);
      expect(connects).toEqual([]);
      expect(resolved).toEqual([]);
    },
  );

  it.each(NON_PUBLIC.filter(([, address]) => address.includes(':')))(
    'never connects to the domain literal [IPv6:%s] (%s)',
    async (_kind, address) => {
      const resolved: string[] = [];
      const report = await prober(() => ['8.8.8.8'], resolved).probe({
        domain: `[IPv6:${address}]`,
        hosts: [`[IPv6:${address}]`],
        recipients: [{ address: `user@[IPv6:${address}]`, smtpUtf8: false }],
      });
      expect(report.connections).toBe(0);
      expect(connects).toEqual([]);
      expect(resolved).toEqual([]);
    },
  );

  it.each(['127.0.0.1', '::1', '10.0.0.1', '::ffff:127.0.0.1', '::7f00:1'])(
    'never connects to an MX record naming the IP %s directly',
    async (literal) => {
      const report = await prober(() => ['8.8.8.8']).probe({
        domain: 'example.org',
        hosts: [literal],
        recipients: [recipient],
      });
      expect(report.connections).toBe(0);
      expect(connects).toEqual([]);
    },
  );

  it('refuses a trailing-dot IP MX name (`MX 10 127.0.0.1.`) when it resolves to loopback', async () => {
    const report = await prober((host) => (host === '127.0.0.1.' ? ['127.0.0.1'] : [])).probe({
      domain: 'example.org',
      hosts: ['127.0.0.1.'],
      recipients: [recipient],
    });
    expect(report.connections).toBe(0);
    expect(connects).toEqual([]);
  });

  it('skips the private addresses of a host and connects only to a checked public one', async () => {
    const report = await prober(() => ['10.0.0.1', '::7f00:1', '8.8.8.8']).probe({
      domain: 'example.org',
      hosts: ['mx.example.org'],
      recipients: [recipient],
    });
    // The one attempt goes to the public address (and is blocked by the interceptor).
    expect(connects).toEqual(['8.8.8.8:2525']);
    expect(report.connections).toBe(1);
  });
});

describe('the engine, on a real DNS server on loopback', () => {
  let dns: TestDnsServer | undefined;
  afterEach(async () => {
    await dns?.close();
    dns = undefined;
  });

  it('never connects to MX hosts that resolve to our own network', async () => {
    dns = await startDnsServer({
      'ssrf-loopback.org': { mx: [{ exchange: 'mx.ssrf-loopback.org', preference: 10 }] },
      'mx.ssrf-loopback.org': { a: ['127.0.0.1'], aaaa: ['::1'] },
      'ssrf-metadata.org': { mx: [{ exchange: 'mx.ssrf-metadata.org', preference: 10 }] },
      'mx.ssrf-metadata.org': { a: ['169.254.169.254'], aaaa: ['::ffff:a9fe:a9fe'] },
      'ssrf-compat.org': { mx: [{ exchange: 'mx.ssrf-compat.org', preference: 10 }] },
      'mx.ssrf-compat.org': { aaaa: ['::7f00:1', '64:ff9b:1::a00:1'] },
      'ssrf-literal.org': { mx: [{ exchange: '10.0.0.1', preference: 10 }] },
      'ssrf-implicit.org': { a: ['192.168.1.1'] },
    });
    const engine = createEngine({
      dnsOptions: { servers: [dns.address], timeoutMs: 1_000, tries: 1 },
      dnsCanary: false,
      smtpOptions: { heloName: 'probe.example.net', mailFrom: 'probe@example.net', port: 2525 },
    });
    for (const domain of [
      'ssrf-loopback.org',
      'ssrf-metadata.org',
      'ssrf-compat.org',
      'ssrf-literal.org',
      'ssrf-implicit.org',
    ]) {
      const verdict = await engine.verify(`someone@${domain}`, { method: 'smtp' });
      expect(verdict.state, domain).not.toBe('deliverable');
    }
    expect(connects).toEqual([]);
    // The names were asked for: the refusal is the policy's, not a lookup that failed.
    expect(dns.questions).toEqual(expect.arrayContaining(['A mx.ssrf-loopback.org']));
  });
});

describe('the engine with domain literals allowed (rfc profile)', () => {
  it.each([
    'user@[127.0.0.1]',
    'user@[10.0.0.1]',
    'user@[169.254.169.254]',
    'user@[0.0.0.0]',
    'user@[IPv6:::1]',
    'user@[IPv6:::ffff:10.0.0.1]',
    'user@[IPv6:::ffff:127.0.0.1]',
    'user@[IPv6:::7f00:1]',
    'user@[IPv6:::127.0.0.1]',
    'user@[IPv6:fe80::1]',
    'user@[IPv6:fd00::1]',
    'user@[IPv6:64:ff9b::7f00:1]',
    'user@[IPv6:2002:7f00:1::]',
  ])('never connects for %s', async (address) => {
    const resolved: string[] = [];
    const engine = createEngine({
      parse: { profile: 'rfc' },
      dns: {
        mx: () => Promise.resolve({ kind: 'nxdomain' }),
        addresses: (host) => {
          resolved.push(host);
          return Promise.resolve(['8.8.8.8']);
        },
      },
      dnsCanary: false,
      smtpOptions: { heloName: 'probe.example.net', mailFrom: 'probe@example.net', port: 2525 },
    });
    const verdict = await engine.verify(address, { method: 'smtp' });
    expect(verdict.state).not.toBe('deliverable');
    expect(resolved).toEqual([]);
    expect(connects).toEqual([]);
  });

  it('does try a public literal (the attempt is intercepted): the refusals above are the policy', async () => {
    const engine = createEngine({
      parse: { profile: 'rfc' },
      dns: { mx: () => Promise.resolve({ kind: 'nxdomain' }) },
      dnsCanary: false,
      smtpOptions: { heloName: 'probe.example.net', mailFrom: 'probe@example.net', port: 2525 },
    });
    await engine.verify('user@[IPv6:2001:4860:4860::8888]', { method: 'smtp' });
    expect(connects).toEqual(['2001:4860:4860::8888:2525']);
  });
});

describe('webhook callback URL at submission', () => {
  const policy = { allowHttp: false, allowPrivateNetworks: false };
  const refused = (url: string, which = policy) => {
    try {
      requireCallbackUrl(url, which);
    } catch (error) {
      return error instanceof ServiceError ? error.code : 'other';
    }
    return 'accepted';
  };

  it.each([
    'https://127.0.0.1/',
    'https://localhost/',
    'https://LOCALHOST/',
    'https://foo.localhost/',
    'https://[::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:7f00:1]/',
    'https://[::7f00:1]/',
    'https://[::127.0.0.1]/',
    'https://[::a00:1]/',
    'https://0.0.0.0/',
    'https://0/',
    'https://2130706433/',
    'https://0x7f.1/',
    'https://017700000001/',
    'https://0x7f000001/',
    'https://127.1/',
    'https://100.64.0.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://[fc00::1]/',
    'https://[fe80::1]/',
    'https://[64:ff9b::7f00:1]/',
    'https://[64:ff9b:1::a00:1]/',
    'https://[2002:7f00:1::]/',
    'https://[4000::1]/',
  ])('refuses %s', (url) => {
    expect(refused(url)).toBe('invalid_request');
  });

  it.each([
    ['http when only https is allowed', 'http://hooks.example.com/'],
    ['credentials', 'https://user:pass@hooks.example.com/'],
    ['a user name alone', 'https://user@hooks.example.com/'],
    ['file:', 'file:///etc/passwd'],
    ['gopher:', 'gopher://hooks.example.com/'],
    ['ftp:', 'ftp://hooks.example.com/'],
    ['data:', 'data:text/plain,x'],
    ['javascript:', 'javascript:alert(1)'],
    ['a relative URL', '/hook'],
    ['a very long URL', `https://hooks.example.com/${'a'.repeat(100_000)}`],
  ])('refuses %s', (_kind, url) => {
    expect(refused(url)).toBe('invalid_request');
  });

  // `localhost.` is the same name fully qualified: taken at submission, the sender refused it
  // later, once it resolved to 127.0.0.1, and the job kept a callback that could never be sent.
  it.each(['https://localhost./', 'https://app.localhost./', 'https://localhost%2e/'])(
    'refuses %s (localhost, fully qualified) at submission',
    (url) => {
      expect(refused(url)).toBe('invalid_request');
    },
  );

  it('takes http only when the policy allows it', () => {
    expect(refused('http://hooks.example.com/', { ...policy, allowHttp: true })).toBe('accepted');
    expect(refused('http://127.0.0.1/', { ...policy, allowHttp: true })).toBe('invalid_request');
  });
});

describe('webhook sender', () => {
  const request = (url: string) => ({ url, headers: {}, body: '{}', timeoutMs: 2_000 });

  it.each([
    'http://127.0.0.1/',
    'http://localhost:9/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://0.0.0.0/',
    'http://0/',
    'http://2130706433/',
    'http://0x7f.1/',
    'http://017700000001/',
    'http://100.64.0.1/',
    'http://169.254.169.254/',
    'http://[fc00::1]/',
    'http://[fe80::1]/',
    'http://[64:ff9b::7f00:1]/',
    'http://[2002:7f00:1::]/',
    'http://[::7f00:1]/',
    'http://[::a00:1]/',
    'http://[64:ff9b:1::a00:1]/',
    'http://[4000::1]/',
  ])('refuses %s without a connection attempt', async (url) => {
    const resolved: string[] = [];
    const sender = createNodeWebhookSender({
      resolve: async (host) => {
        resolved.push(host);
        return host === 'localhost' ? ['127.0.0.1', '::1'] : ['8.8.8.8'];
      },
    });
    expect(await sender.send(request(url))).toMatchObject({
      kind: 'error',
      code: 'forbidden_address',
    });
    expect(connects).toEqual([]);
  });

  it.each(NON_PUBLIC)(
    'refuses a name resolving to %s (%s) without a connection attempt',
    async (_kind, address) => {
      const sender = createNodeWebhookSender({ resolve: async () => [address] });
      expect(await sender.send(request('https://hooks.example.com/done'))).toMatchObject({
        kind: 'error',
        code: 'forbidden_address',
      });
      expect(connects).toEqual([]);
    },
  );

  it.each(['file:///etc/passwd', 'gopher://hooks.example.com/', 'ftp://hooks.example.com/'])(
    'sends nothing to the scheme of %s',
    async (url) => {
      const sender = createNodeWebhookSender({ resolve: async () => ['8.8.8.8'] });
      expect(await sender.send(request(url))).toMatchObject({ kind: 'error' });
      expect(connects).toEqual([]);
    },
  );

  describe('through a real DNS server on loopback', () => {
    let dns: TestDnsServer | undefined;
    afterEach(async () => {
      await dns?.close();
      dns = undefined;
    });

    it('refuses a public-looking name whose A or AAAA record is private', async () => {
      dns = await startDnsServer({
        'hooks.rebind.example': { a: ['127.0.0.1'] },
        'v6.rebind.example': { aaaa: ['::ffff:a9fe:a9fe'] },
        'compat.rebind.example': { aaaa: ['::7f00:1'] },
      });
      const resolver = new Resolver({ timeout: 1_000, tries: 1 });
      resolver.setServers([dns.address]);
      const sender = createNodeWebhookSender({
        resolve: async (host) => {
          const v4 = await resolver.resolve4(host).catch(() => [] as string[]);
          const v6 = await resolver.resolve6(host).catch(() => [] as string[]);
          return [...v4, ...v6];
        },
      });
      for (const host of ['hooks.rebind.example', 'v6.rebind.example', 'compat.rebind.example']) {
        expect(await sender.send(request(`https://${host}/done`))).toMatchObject({
          code: 'forbidden_address',
        });
      }
      expect(connects).toEqual([]);
    });
  });

  it('resolves once and connects to the address it checked (no rebinding)', async () => {
    allowLoopback = true;
    const hits: string[] = [];
    const server = http.createServer((req, res) => {
      hits.push(String(req.headers.host));
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      let resolutions = 0;
      const sender = createNodeWebhookSender({
        allowPrivateNetworks: true,
        // First answer is the checked one; any later lookup would rebind to the metadata IP.
        resolve: async () => (resolutions++ === 0 ? ['127.0.0.1'] : ['169.254.169.254']),
      });
      expect(await sender.send(request(`http://hooks.example.com:${port}/done`))).toEqual({
        kind: 'status',
        status: 200,
      });
      expect(resolutions).toBe(1);
      expect(connects).toEqual([`127.0.0.1:${port}`]);
      expect(hits).toEqual([`hooks.example.com:${port}`]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('never follows a redirect (to a private address or anywhere)', async () => {
    allowLoopback = true;
    let targetHits = 0;
    const target = http.createServer((_req, res) => {
      targetHits++;
      res.end();
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const targetPort = (target.address() as AddressInfo).port;
    const redirector = http.createServer((_req, res) => {
      res.writeHead(307, { location: `http://127.0.0.1:${targetPort}/internal` }).end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
    const port = (redirector.address() as AddressInfo).port;
    try {
      const sender = createNodeWebhookSender({ allowPrivateNetworks: true });
      expect(await sender.send(request(`http://127.0.0.1:${port}/hook`))).toEqual({
        kind: 'status',
        status: 307,
      });
      expect(targetHits).toBe(0);
      expect(connects).toEqual([`127.0.0.1:${port}`]);
    } finally {
      await new Promise((resolve) => redirector.close(resolve));
      await new Promise((resolve) => target.close(resolve));
    }
  });
});

describe('webhook sender against a hostile receiver', () => {
  it('lets the connection go once it has the status, however long the body runs', async () => {
    allowLoopback = true;
    let closed!: () => void;
    const socketClosed = new Promise<void>((resolve) => (closed = resolve));
    let stop = false;
    const server = http.createServer((req, res) => {
      req.socket.on('close', () => {
        stop = true;
        closed();
      });
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      // An endless body: 64 KiB at a time for as long as anyone reads it.
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const pump = () => {
        while (!stop && res.write(chunk));
        if (!stop) res.once('drain', pump);
      };
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const sender = createNodeWebhookSender({ allowPrivateNetworks: true });
      expect(
        await sender.send({
          url: `http://127.0.0.1:${port}/hook`,
          headers: {},
          body: '{}',
          timeoutMs: 2_000,
        }),
      ).toEqual({ kind: 'status', status: 200 });
      // The sender must close its side: a receiver that never ends its body cannot hold it.
      await socketClosed;
    } finally {
      stop = true;
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 10_000);
});
