import { afterEach, describe, expect, it } from 'vitest';
import type * as dnsPacket from 'dns-packet';
import { createNodeDns } from '../../src/adapters/node/dns.js';
import { createCachedDns } from '../../src/dns/cached-dns.js';
import { createEngine, type EngineOptions } from '../../src/compose/engine.js';
import { LOOPBACK_SMTP_OPTIONS, startScriptedServer } from '../helpers/smtp-server.js';
import {
  startScriptedDnsServer,
  type ScriptedDnsServer,
  type ScriptedQuestion,
  type ScriptedReply,
} from '../helpers/dns-server.js';

/**
 * The engine's DNS behaviour against scripted DNS servers on loopback: what each answer a
 * name server can give (and each way it can misbehave) does to a verdict and its facts.
 */

/** How a scripted zone answers one name; an unlisted name is NXDOMAIN unless told. */
interface Name {
  readonly mx?: ReadonlyArray<readonly [preference: number, exchange: string]>;
  readonly a?: readonly string[];
  readonly aaaa?: readonly string[];
  readonly rcode?: ScriptedReply['rcode'];
  readonly silent?: boolean;
  /** Every answer over UDP comes back truncated (TC): the records only over TCP. */
  readonly truncateUdp?: boolean;
  readonly wrongId?: boolean;
  readonly questionName?: string;
}

/** The big mail domains the default canary asks about, answered truthfully. */
const CANARY_ZONE: Readonly<Record<string, Name>> = {
  'gmail.com': { mx: [[5, 'gmail-smtp-in.l.google.com']] },
  'outlook.com': { mx: [[5, 'outlook-com.olc.protection.outlook.com']] },
  'yahoo.com': { mx: [[1, 'mta5.am0.yahoodns.net']] },
};

function reply(entry: Name | undefined, question: ScriptedQuestion): ScriptedReply | null {
  if (entry === undefined) return { rcode: 'NXDOMAIN' };
  if (entry.silent === true) return null;
  const base = {
    ...(entry.truncateUdp === true ? { truncateUdp: true } : {}),
    ...(entry.wrongId === true ? { wrongId: true } : {}),
    ...(entry.questionName !== undefined ? { questionName: entry.questionName } : {}),
  };
  if (entry.rcode !== undefined) return { ...base, rcode: entry.rcode };
  const { name } = question;
  const answers: dnsPacket.Answer[] = [];
  if (question.type === 'MX') {
    for (const [preference, exchange] of entry.mx ?? [])
      answers.push({ type: 'MX', name, ttl: 300, data: { preference, exchange } });
  } else if (question.type === 'A') {
    for (const ip of entry.a ?? []) answers.push({ type: 'A', name, ttl: 300, data: ip });
  } else if (question.type === 'AAAA') {
    for (const ip of entry.aaaa ?? []) answers.push({ type: 'AAAA', name, ttl: 300, data: ip });
  }
  return { ...base, answers };
}

const servers: ScriptedDnsServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(
  zone: Readonly<Record<string, Name>>,
  otherwise?: Name,
  host: '127.0.0.1' | '::1' = '127.0.0.1',
): Promise<ScriptedDnsServer> {
  const server = await startScriptedDnsServer(
    (question) => reply(zone[question.name.toLowerCase()] ?? otherwise, question),
    host,
  );
  servers.push(server);
  return server;
}

/** The default engine (Node's resolver, its canary, its cache) on a scripted server. */
async function engineOn(
  zone: Readonly<Record<string, Name>>,
  otherwise?: Name,
  options: EngineOptions = {},
) {
  const server = await serve({ ...CANARY_ZONE, ...zone }, otherwise);
  const { engine, warnings } = engineAsking(server, options);
  const asked = (type: string, name: string) =>
    server.questions.filter((q) => q.type === type && q.name.toLowerCase() === name).length;
  return { engine, warnings, server, asked };
}

/** The default engine asking `server` alone, and the warnings it gives. */
function engineAsking(server: ScriptedDnsServer, options: EngineOptions = {}) {
  const warnings: string[] = [];
  const engine = createEngine({
    onWarning: (message) => warnings.push(message),
    ...options,
    // Never the system's resolver: every question goes to the scripted server.
    dnsOptions: { timeoutMs: 1_000, tries: 1, ...options.dnsOptions, servers: [server.address] },
  });
  return { engine, warnings };
}

describe('MX answers and their verdicts', () => {
  it('a null MX (RFC 7505) is undeliverable invalid_domain with null_mx, even beside an A record', async () => {
    const { engine } = await engineOn({
      'nullmx-audit.com': { mx: [[0, '.']], a: ['192.0.2.1'] },
    });
    const verdict = await engine.verify('ann@nullmx-audit.com', { method: 'quick' });
    expect([verdict.state, verdict.reason, verdict.score]).toEqual([
      'undeliverable',
      'invalid_domain',
      0,
    ]);
    expect(verdict.riskFactors).toEqual(['null_mx']);
    expect(verdict.mxRecord).toBeNull();
    expect(verdict.mxRecords).toEqual([]);
  });

  it('an MX host named twice, in any case, is one mail host at its best priority', async () => {
    const { engine } = await engineOn({
      'twice-audit.com': {
        mx: [
          [20, 'MX1.Twice-Audit.COM'],
          [10, 'mx1.twice-audit.com'],
          [10, 'mx1.twice-audit.com'],
          [30, 'mx2.twice-audit.com.'],
        ],
      },
    });
    const verdict = await engine.verify('ann@twice-audit.com', { method: 'quick' });
    expect(verdict.state).toBe('deliverable');
    expect(verdict.mxRecords).toEqual(['mx1.twice-audit.com', 'mx2.twice-audit.com']);
  });

  it('a NODATA answer with no address record is undeliverable no_mx from a truthful resolver', async () => {
    const { engine, warnings } = await engineOn({ 'empty-audit.com': {} });
    const verdict = await engine.verify('ann@empty-audit.com', { method: 'quick' });
    expect([verdict.state, verdict.reason]).toEqual(['undeliverable', 'invalid_domain']);
    expect(verdict.riskFactors).toEqual(['no_mx']);
    expect(warnings).toEqual([]);
  });
});

describe('a resolver that lies', () => {
  it('answering NODATA for every name does not make gmail.com undeliverable, and says so once', async () => {
    const server = await serve({}, {});
    const { engine, warnings } = engineAsking(server);
    const verdicts = await Promise.all(
      ['ann@gmail.com', 'bob@outlook.com', 'cy@company-audit.com'].map((address) =>
        engine.verify(address, { method: 'quick' }),
      ),
    );
    for (const verdict of verdicts) {
      expect([verdict.state, verdict.reason]).toEqual(['risky', 'no_connect']);
      expect(verdict.riskFactors).toContain('dns_unavailable');
    }
    expect(warnings).toHaveLength(1);
    expect(engine.dnsHealth()).toMatchObject({ status: 'lying', problem: 'denies_existing_names' });
  });

  it('1,000 concurrent verifies of gmail.com on a sandbox that denies it ask about gmail.com once', async () => {
    const server = await serve({});
    const { engine, warnings } = engineAsking(server);
    const verdicts = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => engine.verify(`u${i}@gmail.com`, { method: 'quick' })),
    );
    expect(new Set(verdicts.map((v) => `${v.state} ${v.reason}`))).toEqual(
      new Set(['risky no_connect']),
    );
    expect(server.questions.filter((q) => q.type === 'MX' && q.name === 'gmail.com')).toHaveLength(
      1,
    );
    expect(warnings).toHaveLength(1);
  });

  it('inventing addresses for missing names makes typos risky, while an empty domain stays no_mx', async () => {
    const { engine, warnings } = await engineOn(
      { 'empty-audit.com': {}, 'real-audit.com': { mx: [[10, 'mx.real-audit.com']] } },
      { a: ['192.0.2.80'] },
    );
    const [typo, empty, real] = await Promise.all(
      ['ann@gmial-audit.com', 'ann@empty-audit.com', 'ann@real-audit.com'].map((address) =>
        engine.verify(address, { method: 'standard' }),
      ),
    );
    expect([typo?.state, typo?.reason]).toEqual(['risky', 'no_connect']);
    expect(typo?.riskFactors).toContain('dns_unavailable');
    expect([empty?.state, empty?.reason, empty?.riskFactors]).toEqual([
      'undeliverable',
      'invalid_domain',
      ['no_mx'],
    ]);
    expect(real?.state).toBe('deliverable');
    expect(warnings).toHaveLength(1);
    expect(engine.dnsHealth()).toMatchObject({ problem: 'answers_nonexistent_names' });
  });

  it('answering NXDOMAIN for every name it answers is caught though one canary name fails', async () => {
    // A sandbox that refuses some names and denies the rest: no big mail domain resolves.
    const server = await serve({ 'yahoo.com': { rcode: 'REFUSED' } });
    const { engine, warnings } = engineAsking(server);
    const verdict = await engine.verify('ann@gmail.com', { method: 'quick' });
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'no_connect']);
    expect(verdict.riskFactors).toContain('dns_unavailable');
    expect(warnings).toHaveLength(1);
  });
});

describe('what the resolver asks and how often', () => {
  it('1,000 concurrent verifies of one domain ask one MX question', async () => {
    const { engine, asked } = await engineOn({
      'one-audit.com': { mx: [[10, 'mx.one-audit.com']] },
      'gone-audit.com': { rcode: 'NXDOMAIN' },
      'aonly-audit.com': { a: ['192.0.2.25'] },
    });
    for (const domain of ['one-audit.com', 'gone-audit.com', 'aonly-audit.com']) {
      const verdicts = await Promise.all(
        Array.from({ length: 1000 }, (_, i) =>
          engine.verify(`user${i}@${domain}`, { method: 'quick' }),
        ),
      );
      expect(new Set(verdicts.map((v) => v.state)).size).toBe(1);
      expect(asked('MX', domain)).toBe(1);
    }
    expect(asked('A', 'aonly-audit.com')).toBe(1);
  });

  it('asks about an internationalized domain in its A-label form, whatever the case', async () => {
    const { engine, server } = await engineOn({
      'xn--bcher-audit-thb.com': { mx: [[10, 'mx.xn--bcher-audit-thb.com']] },
    });
    const verdicts = await Promise.all(
      ['ann@bücher-audit.com', 'bob@BÜCHER-AUDIT.COM', 'cy@xn--bcher-audit-thb.com'].map((a) =>
        engine.verify(a, { method: 'quick' }),
      ),
    );
    expect(verdicts.map((v) => v.state)).toEqual(['deliverable', 'deliverable', 'deliverable']);
    expect(verdicts[0]?.mxRecord).toBe('mx.xn--bcher-audit-thb.com');
    expect(server.questions.map((q) => `${q.type} ${q.name.toLowerCase()}`)).toEqual([
      'MX xn--bcher-audit-thb.com',
    ]);
  });

  it('follows a truncated (TC) answer over TCP: 100 MX records, the best first', async () => {
    const mx: Array<[number, string]> = Array.from({ length: 100 }, (_, i) => [
      10 + (i % 7),
      `mx${String(i).padStart(3, '0')}.a-rather-long-mail-host-name.many-audit.com`,
    ]);
    const { engine, server } = await engineOn({
      'many-audit.com': { mx, truncateUdp: true },
    });
    const verdict = await engine.verify('ann@many-audit.com', { method: 'quick' });
    expect(verdict.state).toBe('deliverable');
    expect(verdict.mxRecords).toHaveLength(100);
    expect(verdict.mxRecord).toBe('mx000.a-rather-long-mail-host-name.many-audit.com');
    expect(server.questions.some((q) => q.transport === 'tcp')).toBe(true);
  });

  it('a truncated answer that cannot be had over TCP is no evidence', async () => {
    const udpOnly = await startScriptedDnsServer(
      (q) => ({ truncateUdp: true, ...reply({ mx: [[10, 'mx.tc-audit.com']] }, q) }),
      '127.0.0.1',
      false,
    );
    servers.push(udpOnly);
    const dns = createNodeDns({ servers: [udpOnly.address], timeoutMs: 1_000, tries: 1 });
    expect((await dns.mx('tc-audit.com')).kind).toBe('failure');
  });

  it('takes an answer whose question differs only in case (RFC 4343)', async () => {
    const shouting = await startScriptedDnsServer((q) => ({
      ...reply({ mx: [[10, 'MX.Case-Audit.COM']] }, q),
      questionName: q.name.toUpperCase(),
    }));
    servers.push(shouting);
    const dns = createNodeDns({ servers: [shouting.address], timeoutMs: 1_000, tries: 1 });
    expect(await dns.mx('case-audit.com')).toEqual({
      kind: 'records',
      hosts: [{ exchange: 'mx.case-audit.com', priority: 10 }],
    });
  });

  it('reaches a configured server on IPv6 loopback with its port', async () => {
    const server = await serve(
      { ...CANARY_ZONE, 'v6-audit.com': { mx: [[10, 'mx.v6-audit.com']] } },
      undefined,
      '::1',
    );
    expect(server.address).toMatch(/^\[::1\]:\d+$/);
    const { engine } = engineAsking(server);
    const verdict = await engine.verify('ann@v6-audit.com', { method: 'quick' });
    expect([verdict.state, verdict.mxRecord]).toEqual(['deliverable', 'mx.v6-audit.com']);
  });
});

describe('answers that are no evidence', () => {
  it('SERVFAIL, REFUSED, NOTIMP and FORMERR are risky no_connect with dns_unavailable', async () => {
    const { engine, warnings } = await engineOn({
      'servfail-audit.com': { rcode: 'SERVFAIL' },
      'refused-audit.com': { rcode: 'REFUSED' },
      'notimp-audit.com': { rcode: 'NOTIMP' },
      'formerr-audit.com': { rcode: 'FORMERR' },
    });
    for (const name of ['servfail', 'refused', 'notimp', 'formerr']) {
      const verdict = await engine.verify(`ann@${name}-audit.com`, { method: 'quick' });
      expect([name, verdict.state, verdict.reason]).toEqual([name, 'risky', 'no_connect']);
      expect(verdict.riskFactors).toEqual(['dns_unavailable']);
      expect(verdict.mxRecord).toBeNull();
    }
    expect(warnings).toEqual([]);
  });

  it('a reply with the wrong id or about another name is ignored: risky, never a verdict on the domain', async () => {
    const { engine } = await engineOn(
      {
        'wrongid-audit.com': { rcode: 'NXDOMAIN', wrongId: true },
        'wrongq-audit.com': { rcode: 'NXDOMAIN', questionName: 'other-audit.com' },
        'silent-audit.com': { silent: true },
      },
      undefined,
      { dnsOptions: { timeoutMs: 300, tries: 1 } },
    );
    for (const name of ['wrongid', 'wrongq', 'silent']) {
      const verdict = await engine.verify(`ann@${name}-audit.com`, { method: 'quick' });
      expect([name, verdict.state, verdict.reason]).toEqual([name, 'risky', 'timeout']);
      expect(verdict.riskFactors).toEqual(['dns_unavailable']);
    }
  });
});

describe('implicit MX (RFC 5321 5.1) and odd exchanges', () => {
  it('no MX but an A or AAAA record: the domain is its own mail host', async () => {
    const { engine } = await engineOn({
      'a-audit.com': { a: ['192.0.2.25'] },
      'aaaa-audit.com': { aaaa: ['2001:db8::25'] },
    });
    for (const domain of ['a-audit.com', 'aaaa-audit.com']) {
      const verdict = await engine.verify(`ann@${domain}`, { method: 'quick' });
      expect([verdict.state, verdict.reason, verdict.mxRecord]).toEqual([
        'deliverable',
        'accepted_email',
        domain,
      ]);
    }
  });

  it('no MX, and the address lookup fails: no evidence, not no_mx', async () => {
    const server = await startScriptedDnsServer((q) => {
      const name = q.name.toLowerCase();
      if (name in CANARY_ZONE) return reply(CANARY_ZONE[name], q);
      return q.type === 'MX' ? { answers: [] } : { rcode: 'SERVFAIL' };
    });
    servers.push(server);
    const { engine } = engineAsking(server);
    const verdict = await engine.verify('ann@flaky-audit.com', { method: 'quick' });
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'no_connect']);
    expect(verdict.riskFactors).toEqual(['dns_unavailable']);
  });

  it('an exchange named in upper case with the root dot is the lowercase mail host', async () => {
    const { engine } = await engineOn({
      'upper-audit.com': { mx: [[10, 'MX.Upper-Audit.COM.']] },
    });
    const verdict = await engine.verify('ann@upper-audit.com', { method: 'quick' });
    expect([verdict.state, verdict.mxRecord]).toEqual(['deliverable', 'mx.upper-audit.com']);
  });
});

describe('the node adapter and the cache on their own', () => {
  it('an MX exchange written as an IP address is that address, asked of no name server', async () => {
    const { server } = await engineOn({ 'iplit-audit.com': { mx: [[10, '192.0.2.7']] } });
    const dns = createNodeDns({ servers: [server.address], timeoutMs: 1_000, tries: 1 });
    expect(await dns.mx('iplit-audit.com')).toEqual({
      kind: 'records',
      hosts: [{ exchange: '192.0.2.7', priority: 10 }],
    });
    expect(await dns.addresses?.('192.0.2.7')).toEqual(['192.0.2.7']);
    expect(await dns.addresses?.('2001:db8::25')).toEqual(['2001:db8::25']);
    expect(server.questions.map((q) => q.name)).toEqual(['iplit-audit.com']);
  });

  it('one domain with and without the root dot, in any case, is one cached question', async () => {
    const { server } = await engineOn({ 'dot-audit.com': { mx: [[10, 'mx.dot-audit.com']] } });
    const dns = createCachedDns(
      createNodeDns({ servers: [server.address], timeoutMs: 1_000, tries: 1 }),
    );
    const answers = await Promise.all(
      ['dot-audit.com', 'DOT-audit.com.', 'dot-audit.com.'].map((d) => dns.mx(d)),
    );
    expect(answers.map((a) => a.kind)).toEqual(['records', 'records', 'records']);
    await dns.mx('Dot-Audit.Com.');
    expect(server.questions).toHaveLength(1);
  });

  it('a null MX beside other MX records (RFC 7505 forbids it) leaves the real hosts', async () => {
    // A sending MTA tries the records by preference: "." cannot be reached, the others can.
    const { engine } = await engineOn({
      'mixed-audit.com': {
        mx: [
          [0, '.'],
          [10, 'mx.mixed-audit.com'],
        ],
      },
    });
    const verdict = await engine.verify('ann@mixed-audit.com', { method: 'quick' });
    expect([verdict.state, verdict.mxRecords]).toEqual(['deliverable', ['mx.mixed-audit.com']]);
  });
});

describe('configured servers, timeouts and tries', () => {
  it('a silent first server leaves time for the next one, whatever the tries', async () => {
    const silent = await startScriptedDnsServer(() => null);
    servers.push(silent);
    const good = await serve({ 'failover-audit.com': { mx: [[10, 'mx.failover-audit.com']] } });
    for (const tries of [1, 2]) {
      const dns = createNodeDns({
        servers: [silent.address, good.address],
        timeoutMs: 1_500,
        tries,
      });
      expect(await dns.mx('failover-audit.com')).toEqual({
        kind: 'records',
        hosts: [{ exchange: 'mx.failover-audit.com', priority: 10 }],
      });
    }
  });

  it('a slow server that answers before the deadline is heard, whatever the tries', async () => {
    const slow = await startScriptedDnsServer((q) =>
      q.type === 'MX'
        ? {
            delayMs: 500,
            answers: [
              {
                type: 'MX',
                name: q.name,
                ttl: 60,
                data: { preference: 10, exchange: 'mx.slow-audit.com' },
              },
            ],
          }
        : { answers: [] },
    );
    servers.push(slow);
    for (const tries of [1, 2]) {
      const dns = createNodeDns({ servers: [slow.address], timeoutMs: 2_500, tries });
      expect([tries, (await dns.mx(`t${tries}.slow-audit.com`)).kind]).toEqual([tries, 'records']);
    }
  });

  it('a first server that answers SERVFAIL, REFUSED or NOTIMP does not hide the next one', async () => {
    const good = await serve({
      'backup-audit.com': { mx: [[10, 'mx.backup-audit.com']] },
      'aonly-backup-audit.com': { a: ['192.0.2.25'] },
    });
    for (const rcode of ['SERVFAIL', 'REFUSED', 'NOTIMP'] as const) {
      const broken = await startScriptedDnsServer(() => ({ rcode }));
      servers.push(broken);
      const dns = createNodeDns({ servers: [broken.address, good.address], timeoutMs: 1_500 });
      expect([rcode, await dns.mx('backup-audit.com')]).toEqual([
        rcode,
        { kind: 'records', hosts: [{ exchange: 'mx.backup-audit.com', priority: 10 }] },
      ]);
      expect([rcode, await dns.mx('aonly-backup-audit.com')]).toEqual([
        rcode,
        { kind: 'implicit', host: 'aonly-backup-audit.com' },
      ]);
      expect([rcode, await dns.mx('gone-backup-audit.com')]).toEqual([rcode, { kind: 'nxdomain' }]);
      expect(await dns.addresses?.('aonly-backup-audit.com')).toEqual(['192.0.2.25']);
    }
  });

  it('when every server fails, the first failure is the answer', async () => {
    const refusing = await startScriptedDnsServer(() => ({ rcode: 'REFUSED' }));
    const failing = await startScriptedDnsServer(() => ({ rcode: 'SERVFAIL' }));
    servers.push(refusing, failing);
    const dns = createNodeDns({ servers: [refusing.address, failing.address], timeoutMs: 1_500 });
    expect(await dns.mx('any-audit.com')).toEqual({ kind: 'failure', code: 'refused' });
  });

  it('refuses tries or a deadline it cannot honour, naming the option', () => {
    expect(() => createNodeDns({ tries: 0 })).toThrow(/tries/);
    expect(() => createNodeDns({ timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => createNodeDns({ timeoutMs: Number.NaN })).toThrow(/timeoutMs/);
    expect(() => createNodeDns({ timeoutMs: 3_000_000_000, tries: 1 })).not.toThrow();
  });
});

describe('the smtp method on DNS from loopback', () => {
  const SMTP = LOOPBACK_SMTP_OPTIONS;

  it('reaches the mail host by MX name, by an IP-address exchange and by implicit MX, past one that does not resolve', async () => {
    const smtp = await startScriptedServer({
      mailboxes: {
        'ann@named-audit.com': 'accept',
        'ann@literal-audit.com': 'accept',
        'ann@implicit-audit.com': 'accept',
      },
    });
    try {
      const { engine } = await engineOn(
        {
          'named-audit.com': {
            mx: [
              [5, 'gone.named-audit.com'],
              [10, 'mx.named-audit.com'],
            ],
          },
          'mx.named-audit.com': { a: ['127.0.0.1'] },
          'literal-audit.com': { mx: [[10, '127.0.0.1']] },
          'implicit-audit.com': { a: ['127.0.0.1'] },
        },
        undefined,
        { smtpOptions: { ...SMTP, port: smtp.port } },
      );
      for (const domain of ['named-audit.com', 'literal-audit.com', 'implicit-audit.com']) {
        const verdict = await engine.verify(`ann@${domain}`, { method: 'smtp' });
        expect([domain, verdict.state, verdict.reason]).toEqual([
          domain,
          'deliverable',
          'accepted_email',
        ]);
      }
      expect(smtp.rcpts).toEqual(
        expect.arrayContaining([
          'ann@named-audit.com',
          'ann@literal-audit.com',
          'ann@implicit-audit.com',
        ]),
      );
    } finally {
      await smtp.close();
    }
  });
});
