import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import type { Verdict } from '../../src/engine/verdict.js';
import type { NodeSmtpOptions } from '../../src/adapters/node/smtp.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { startLineServer, type LineScript, type LineServer } from '../helpers/line-smtp-server.js';

/**
 * Servers that refuse US, not the mailbox, or that take fewer recipients than we send, each
 * replayed on loopback the way real MTAs say it. Every verdict must be one an email-operations
 * engineer would sign: never undeliverable for a refusal about our sender, IP or policy.
 */
const running: LineServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.close()));
});

async function serve(
  script: LineScript,
  options?: Parameters<typeof startLineServer>[1],
): Promise<LineServer> {
  const server = await startLineServer(script, options);
  running.push(server);
  return server;
}

function engineFor(server: LineServer, smtpOptions: Partial<NodeSmtpOptions> = {}) {
  return createEngine({
    dns: createMemoryDns(
      { 'example.org': ['mx.example.net'] },
      { 'mx.example.net': ['127.0.0.1'] },
    ),
    smtpOptions: {
      port: server.port,
      allowPrivateNetworks: true,
      heloName: 'probe.example.net',
      mailFrom: 'verify@example.net',
      connectTimeoutMs: 2_000,
      bannerTimeoutMs: 2_000,
      commandTimeoutMs: 2_000,
      ...smtpOptions,
    },
    // Longer than any test may take: a test that waits for a greylist retry fails by its timeout.
    greylistRetryMs: 600_000,
  });
}

async function verifyAll(server: LineServer, addresses: readonly string[], smtp = {}) {
  const engine = engineFor(server, smtp);
  const verdicts: Verdict[] = [];
  for await (const { index, verdict } of engine.verifyMany(addresses, { method: 'smtp' })) {
    verdicts[index] = verdict;
  }
  for (let i = 0; i < 50 && server.open() > 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(server.open(), 'no socket is left open').toBe(0);
  return verdicts;
}

/** Mailboxes a@..d@ exist; every other one is unknown (Postfix's words). */
function mailbox(command: string): string {
  const address = command.slice(command.indexOf('<') + 1, command.lastIndexOf('>'));
  return /^[a-d]@/.test(address)
    ? '250 2.1.5 Ok\r\n'
    : `550 5.1.1 <${address}>: Recipient address rejected: User unknown in virtual mailbox table\r\n`;
}

const stateAndReason = (verdicts: readonly Verdict[]) =>
  verdicts.map((v) => [v.email, v.state, v.reason]);

const ADDRESSES = [
  'a@example.org',
  'x@example.org',
  'b@example.org',
  'c@example.org',
  'y@example.org',
  'd@example.org',
];
const TRUTH = ADDRESSES.map((address) =>
  /^[a-d]@/.test(address)
    ? [address, 'deliverable', 'accepted_email']
    : [address, 'undeliverable', 'rejected_email'],
);

describe('replies about us are never a verdict on the mailbox', () => {
  it('554 5.7.1 "Recipient address rejected: Access denied" is policy: risky, unknown family', async () => {
    const server = await serve((command) =>
      command.startsWith('RCPT')
        ? `554 5.7.1 <${command.slice(9, -1)}>: Recipient address rejected: Access denied\r\n`
        : null,
    );
    const [verdict] = await verifyAll(server, ['a@example.org']);
    expect([verdict?.state, verdict?.reason]).toEqual(['risky', 'unavailable_smtp']);
  });

  it('a reputation block worded as a recipient rejection is policy', async () => {
    const server = await serve((command) =>
      command.startsWith('RCPT')
        ? '550 5.7.1 Recipient address rejected: Service unavailable; Client host [192.0.2.7] blocked using zen.spamhaus.org\r\n'
        : null,
    );
    const [verdict] = await verifyAll(server, ['x@example.org']);
    expect([verdict?.state, verdict?.reason]).toEqual(['risky', 'unavailable_smtp']);
  });

  it('sender verification at RCPT (550 5.1.7 about our sender) judges no address', async () => {
    const server = await serve((command) =>
      command.startsWith('RCPT')
        ? '550 5.1.7 <verify@example.net>: Sender address rejected: undeliverable address: host example.net said: 550 5.1.1 unknown user\r\n'
        : null,
    );
    const verdicts = await verifyAll(server, ['a@example.org', 'x@example.org']);
    for (const verdict of verdicts) {
      expect([verdict.state, verdict.reason]).toEqual(['risky', 'unavailable_smtp']);
      expect(verdict.riskFactors).not.toContain('smtp_rejected');
    }
  });

  it("450 4.1.8 at MAIL FROM is our sender's domain, not greylisting: no wait, no greylisted flag", async () => {
    const server = await serve((command) =>
      command.startsWith('MAIL')
        ? '450 4.1.8 <verify@example.net>: Sender address rejected: Domain not found\r\n'
        : null,
    );
    const engine = engineFor(server);
    // retryGreylisted would wait 10 minutes (longer than the test may run) if this were greylisting.
    const verdict = await engine.verify('a@example.org', { method: 'smtp', retryGreylisted: true });
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'unavailable_smtp']);
    expect(verdict.riskFactors).not.toContain('greylisted');
  });
});

describe('too many recipients is not an answer: the rest go in a new transaction', () => {
  for (const [name, refusal] of [
    ['452 4.5.3', '452 4.5.3 Error: too many recipients\r\n'],
    ['552 5.5.3', '552 5.5.3 Too many recipients\r\n'],
    ['452 without an enhanced code', '452 Too many recipients received this message\r\n'],
  ] as const) {
    for (const pipelining of [true, false]) {
      it(`${name}, ${pipelining ? 'pipelined' : 'one command at a time'}: every mailbox gets its true answer`, async () => {
        const server = await serve(
          (command, session) => {
            if (!command.startsWith('RCPT')) return null;
            return session.rcptsInTransaction > 2 ? refusal : mailbox(command);
          },
          { extensions: pipelining ? ['PIPELINING', 'ENHANCEDSTATUSCODES'] : [] },
        );
        const verdicts = await verifyAll(server, ADDRESSES);
        expect(stateAndReason(verdicts)).toEqual(TRUTH);
        expect(verdicts.some((v) => v.mailboxFull === true)).toBe(false);
        // Each address (and the catch-all probe) was asked until it had an answer.
        const rcpts = server.commands.filter((c) => c.startsWith('RCPT'));
        for (const address of ADDRESSES) expect(rcpts).toContain(`RCPT TO:<${address}>`);
      });
    }
  }

  it('a server that allows few recipients per session gets the rest in a new session', async () => {
    const server = await serve((command, session) => {
      if (!command.startsWith('RCPT')) return null;
      return session.rcptsInSession > 3
        ? '452 4.5.3 Too many recipients for this session\r\n'
        : mailbox(command);
    });
    const verdicts = await verifyAll(server, ADDRESSES);
    expect(stateAndReason(verdicts)).toEqual(TRUTH);
    expect(server.connections()).toBeGreaterThan(1);
  });

  it('a server that answers every RCPT "too many" leaves the addresses unknown, and ends', async () => {
    const server = await serve((command) =>
      command.startsWith('RCPT') ? '452 4.5.3 Too many recipients\r\n' : null,
    );
    const verdicts = await verifyAll(server, ADDRESSES.slice(0, 3));
    for (const verdict of verdicts) {
      expect([verdict.state, verdict.reason]).toEqual(['risky', 'unavailable_smtp']);
    }
  });
});

describe('timers and goodbyes', () => {
  it('a server that answers MAIL FROM and stalls in a pipelined group times out per command, not per session', async () => {
    const server = await serve((command) => {
      if (command.startsWith('RCPT')) return undefined;
      return null;
    });
    // The session deadline is longer than the test may run: only the re-armed command timer
    // can end this session in time.
    const [verdict] = await verifyAll(server, ['a@example.org'], {
      commandTimeoutMs: 300,
      sessionDeadlineMs: 600_000,
    });
    expect([verdict?.state, verdict?.reason]).toEqual(['risky', 'timeout']);
  });

  it('QUIT waits for the 221 before closing', async () => {
    const server = await serve(mailboxScript, { quitDelayMs: 150 });
    const verdicts = await verifyAll(server, ['a@example.org', 'x@example.org']);
    expect(stateAndReason(verdicts)).toEqual([
      ['a@example.org', 'deliverable', 'accepted_email'],
      ['x@example.org', 'undeliverable', 'rejected_email'],
    ]);
    expect(server.openAtGoodbye.length).toBeGreaterThan(0);
    expect(server.openAtGoodbye.every(Boolean)).toBe(true);
  });

  it('a server that never says 221 is left after a short wait, answers intact', async () => {
    const server = await serve((command) =>
      command.startsWith('QUIT') ? undefined : mailboxScript(command),
    );
    const verdicts = await verifyAll(server, ['a@example.org'], {
      quitTimeoutMs: 200,
      sessionDeadlineMs: 600_000,
    });
    expect(stateAndReason(verdicts)).toEqual([['a@example.org', 'deliverable', 'accepted_email']]);
  });
});

function mailboxScript(command: string): string | null {
  return command.startsWith('RCPT') ? mailbox(command) : null;
}
