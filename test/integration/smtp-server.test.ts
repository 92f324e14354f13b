import { afterEach, describe, expect, it } from 'vitest';
import { createNodeSmtp, type NodeSmtpOptions } from '../../src/adapters/node/smtp.js';
import { createEngine } from '../../src/compose/engine.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import {
  startScriptedServer,
  type ScriptedServer,
  type ScriptOptions,
} from '../helpers/smtp-server.js';

const servers: ScriptedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const DOMAINS = ['example.org', 'catch-all.org', 'second.org'];

async function setup(script: ScriptOptions, smtpOptions: Partial<NodeSmtpOptions> = {}) {
  const server = await startScriptedServer(script);
  servers.push(server);
  const dns = createMemoryDns(
    Object.fromEntries(DOMAINS.map((domain) => [domain, ['mx.example.net']])),
    { 'mx.example.net': ['127.0.0.1'] },
  );
  const engine = createEngine({
    dns,
    smtpOptions: {
      port: server.port,
      allowPrivateNetworks: true,
      heloName: 'probe.example.net',
      mailFrom: 'verify@example.net',
      ...smtpOptions,
    },
    greylistRetryMs: 50,
  });
  return { server, engine };
}

describe('smtp method against nodemailer smtp-server on loopback', () => {
  it('tells an existing mailbox from an unknown one', async () => {
    const { engine } = await setup({ mailboxes: { 'ann@example.org': 'accept' } });
    const ann = await engine.verify('ann@example.org', { method: 'smtp' });
    expect([ann.state, ann.reason, ann.score]).toEqual(['deliverable', 'accepted_email', 100]);
    expect(ann.catchAll).toBe(false);
    const bob = await engine.verify('bob@example.org', { method: 'smtp' });
    expect([bob.state, bob.reason, bob.score]).toEqual(['undeliverable', 'rejected_email', 0]);
    expect(bob.riskFactors).toEqual(['smtp_rejected']);
  });

  it('reports a full mailbox as risky low_deliverability', async () => {
    const { engine } = await setup({
      mailboxes: { 'full@example.org': { code: 452, message: '4.2.2 Mailbox full' } },
    });
    const verdict = await engine.verify('full@example.org', { method: 'smtp' });
    expect([verdict.state, verdict.reason, verdict.mailboxFull]).toEqual([
      'risky',
      'low_deliverability',
      true,
    ]);
  });

  it('reports a disabled mailbox as rejected', async () => {
    const { engine } = await setup({
      mailboxes: { 'gone@example.org': { code: 550, message: '5.2.1 Mailbox disabled' } },
    });
    const verdict = await engine.verify('gone@example.org', { method: 'smtp' });
    expect([verdict.state, verdict.reason]).toEqual(['undeliverable', 'rejected_email']);
    expect(verdict.checks.at(-1)?.code).toBe('mailbox_disabled');
  });

  it('calls an accepted address on a catch-all domain risky, once per domain', async () => {
    const { engine, server } = await setup({ catchAllDomains: ['catch-all.org'] });
    const first = await engine.verify('anyone@catch-all.org', { method: 'smtp' });
    expect([first.state, first.reason, first.catchAll]).toEqual([
      'risky',
      'low_deliverability',
      true,
    ]);
    expect(first.riskFactors).toContain('catch_all');
    await engine.verify('someone@catch-all.org', { method: 'smtp' });
    // The random-address probe ran once; the second verdict used the cached answer.
    const probes = server.rcpts.filter((rcpt) => /^[a-z\d]{20}@catch-all\.org$/.test(rcpt));
    expect(probes).toHaveLength(1);
  });

  it('answers greylisting with unavailable_smtp, and gets the real answer when asked to retry', async () => {
    const script: ScriptOptions = {
      rcpt: (address, attempt) =>
        address === 'ann@example.org' && attempt === 1
          ? { code: 450, message: '4.2.0 Greylisted, see http://postgrey.schweikert.ch/' }
          : undefined,
      mailboxes: { 'ann@example.org': 'accept' },
    };
    const { engine } = await setup(script);
    const once = await engine.verify('ann@example.org', { method: 'smtp' });
    expect([once.state, once.reason]).toEqual(['risky', 'unavailable_smtp']);
    expect(once.riskFactors).toContain('greylisted');

    const again = await setup({ ...script });
    const retried = await again.engine.verify('ann@example.org', {
      method: 'smtp',
      retryGreylisted: true,
    });
    expect([retried.state, retried.reason]).toEqual(['deliverable', 'accepted_email']);
  });

  it('never calls an address invalid because our IP is blocked', async () => {
    const { engine } = await setup({
      otherwise: {
        code: 554,
        message:
          '5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org',
      },
    });
    const verdict = await engine.verify('ann@example.org', { method: 'smtp' });
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'unavailable_smtp']);
    expect(verdict.checks.find((c) => c.check === 'smtp')?.code).toBe('sender_blocked');
  });

  it('answers a 421 in mid-dialogue as unavailable, never as rejected', async () => {
    const { engine } = await setup({
      otherwise: { code: 421, message: '4.3.2 Service shutting down' },
    });
    const verdict = await engine.verify('ann@example.org', { method: 'smtp' });
    expect(verdict.state).toBe('risky');
    expect(verdict.reason).toBe('unavailable_smtp');
  });

  it('upgrades to TLS with a self-signed certificate (checks off by default)', async () => {
    const { engine, server } = await setup({
      mailboxes: { 'ann@example.org': 'accept' },
      server: { hideSTARTTLS: false },
    });
    const verdict = await engine.verify('ann@example.org', { method: 'smtp' });
    expect(verdict.reason).toBe('accepted_email');
    expect(server.tlsSessions()).toBe(1);
  });

  it('falls back to plain text when certificate checks are on and the certificate is self-signed', async () => {
    const { engine, server } = await setup(
      { mailboxes: { 'ann@example.org': 'accept' }, server: { hideSTARTTLS: false } },
      { tls: { rejectUnauthorized: true } },
    );
    const verdict = await engine.verify('ann@example.org', { method: 'smtp' });
    expect(verdict.reason).toBe('accepted_email');
    expect(server.connections()).toBe(2);
    expect(server.tlsSessions()).toBe(0);
  });

  it('sends a UTF-8 address with SMTPUTF8 only to a server that offers it', async () => {
    const offering = await setup({ mailboxes: { 'jörg@example.org': 'accept' } });
    const accepted = await offering.engine.verify('jörg@example.org', { method: 'smtp' });
    expect(accepted.reason).toBe('accepted_email');
    expect(offering.server.mails.at(-1)?.utf8).toBe(true);

    const lacking = await setup({
      mailboxes: { 'jörg@example.org': 'accept' },
      server: { hideSMTPUTF8: true },
    });
    const refused = await lacking.engine.verify('jörg@example.org', { method: 'smtp' });
    expect([refused.state, refused.reason]).toEqual(['undeliverable', 'rejected_email']);
    expect(lacking.server.rcpts).not.toContain('jörg@example.org');
  });

  it('verifies many addresses of a domain over one session', async () => {
    const mailboxes = Object.fromEntries(
      Array.from({ length: 60 }, (_, i) => [`user${i}@example.org`, 'accept' as const]),
    );
    const { engine, server } = await setup({ mailboxes }, { recipientsPerSession: 100 });
    const addresses = [...Object.keys(mailboxes), 'nobody@example.org', 'x@second.org'];
    const verdicts = [];
    for await (const result of engine.verifyMany(addresses, {
      method: 'smtp',
      perDomain: 100,
    })) {
      verdicts[result.index] = result.verdict;
    }
    expect(verdicts.slice(0, 60).every((v) => v.reason === 'accepted_email')).toBe(true);
    expect(verdicts[60]?.reason).toBe('rejected_email');
    expect(verdicts[61]?.reason).toBe('rejected_email');
    // One session per domain: example.org and second.org.
    expect(server.connections()).toBe(2);
  });

  it('caps recipients per session and connections per host', async () => {
    const { engine, server } = await setup(
      { otherwise: 'accept' },
      { recipientsPerSession: 10, maxConnectionsPerHost: 2 },
    );
    const addresses = Array.from({ length: 45 }, (_, i) => `u${i}@example.org`);
    let accepted = 0;
    for await (const { verdict } of engine.verifyMany(addresses, {
      method: 'smtp',
      concurrency: 45,
    })) {
      if (verdict.reason === 'low_deliverability') accepted++;
    }
    expect(accepted).toBe(45);
    // 45 addresses and one catch-all probe, 10 a session: 5 sessions, at most 2 at a time.
    expect(server.connections()).toBe(5);
    expect(server.maxConcurrent()).toBeLessThanOrEqual(2);
  });

  it('refuses to connect to loopback unless private networks are allowed', async () => {
    const { engine, server } = await setup(
      { otherwise: 'accept' },
      { allowPrivateNetworks: false },
    );
    const verdict = await engine.verify('ann@example.org', { method: 'smtp' });
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'no_connect']);
    expect(server.connections()).toBe(0);
  });

  it('tries the next MX when the first cannot be reached', async () => {
    const server = await startScriptedServer({ mailboxes: { 'ann@example.org': 'accept' } });
    servers.push(server);
    const prober = createNodeSmtp({
      port: server.port,
      allowPrivateNetworks: true,
      heloName: 'probe.example.net',
      mailFrom: 'verify@example.net',
      // 127.0.0.2 is loopback too, but nothing listens there on this port.
      resolveHost: async (host) => (host === 'mx1.example.net' ? ['127.0.0.2'] : ['127.0.0.1']),
    });
    const report = await prober.probe({
      domain: 'example.org',
      hosts: ['mx1.example.net', 'mx2.example.net'],
      recipients: [{ address: 'ann@example.org', smtpUtf8: false }],
    });
    expect(report.recipients[0]).toMatchObject({ class: 'accepted', host: 'mx2.example.net' });
    expect(report.connections).toBe(2);
  });
});
