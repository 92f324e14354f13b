import { afterEach, describe, expect, it } from 'vitest';
import type * as dnsPacket from 'dns-packet';
import { createEngine, type EngineOptions } from '../../src/engine/engine.js';
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
  const warnings: string[] = [];
  const engine = createEngine({
    dnsOptions: { servers: [server.address], timeoutMs: 1_000, tries: 1 },
    onWarning: (message) => warnings.push(message),
    ...options,
  });
  const asked = (type: string, name: string) =>
    server.questions.filter((q) => q.type === type && q.name.toLowerCase() === name).length;
  return { engine, warnings, server, asked };
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
    const warnings: string[] = [];
    const engine = createEngine({
      dnsOptions: { servers: [server.address], timeoutMs: 1_000, tries: 1 },
      onWarning: (message) => warnings.push(message),
    });
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

  it('answering NXDOMAIN for every name it answers is caught though one canary name fails', async () => {
    // A sandbox that refuses some names and denies the rest: no big mail domain resolves.
    const server = await serve({ 'yahoo.com': { rcode: 'REFUSED' } });
    const warnings: string[] = [];
    const engine = createEngine({
      dnsOptions: { servers: [server.address], timeoutMs: 1_000, tries: 1 },
      onWarning: (message) => warnings.push(message),
    });
    const verdict = await engine.verify('ann@gmail.com', { method: 'quick' });
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'no_connect']);
    expect(verdict.riskFactors).toContain('dns_unavailable');
    expect(warnings).toHaveLength(1);
  });
});
