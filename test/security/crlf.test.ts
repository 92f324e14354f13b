import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeSmtp } from '../../src/adapters/node/smtp.js';
import { parseAddress } from '../../src/address/parse.js';
import { createEngine } from '../../src/compose/engine.js';
import {
  ehlo,
  encodeCommand,
  helo,
  mailFrom,
  rcptTo,
  UnsafeCommandError,
} from '../../src/smtp/commands.js';
import { ProbeSession, type SessionAction } from '../../src/smtp/session.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { fcParams } from '../helpers/fast-check.js';
import { startLineServer, type LineServer } from '../helpers/line-smtp-server.js';

/**
 * SMTP command injection (RFC 5321 2.3.8: CR and LF end a command): no address, HELO name or
 * MAIL FROM ever puts a raw CR, LF or NUL into a command ahead of its terminator, whatever the
 * path, and a configuration carrying one is refused when it is given.
 */

/** Characters that end or split a line somewhere, and their escaped spellings. */
const BREAKERS = ['\r', '\n', '\r\n', '\0', '\u2028', '\u2029', '\u0085', '\u000b', '\u000c'];
const RAW_BREAK = /[\0\n\r]/;

/** Exactly one CRLF, at the end, and no NUL anywhere. */
function isOneCommand(wire: string): boolean {
  return wire.endsWith('\r\n') && !RAW_BREAK.test(wire.slice(0, -2));
}

const hostile = fc
  .array(
    fc.oneof(
      fc.constantFrom(...BREAKERS, '\\', '"', '@', '.', '<', '>', ' ', '[', ']', ':'),
      fc.string({ maxLength: 4 }),
      fc.string({ unit: 'grapheme', maxLength: 3 }),
    ),
    { maxLength: 24 },
  )
  .map((parts) => parts.join(''));

describe('the command writer', () => {
  it('either refuses a value or sends it as exactly one command', () => {
    fc.assert(
      fc.property(hostile, fc.boolean(), (value, utf8) => {
        for (const build of [rcptTo, ehlo, helo, (v: string) => mailFrom(v, utf8)]) {
          let wire: string;
          try {
            wire = build(value);
          } catch (error) {
            expect(error).toBeInstanceOf(UnsafeCommandError);
            expect(RAW_BREAK.test(value)).toBe(true);
            continue;
          }
          expect(isOneCommand(wire)).toBe(true);
        }
      }),
      fcParams(),
    );
  });

  it.each(['\r', '\n', '\0', '\r\n'])('refuses %j at the start, middle and end', (bad) => {
    for (const text of [`${bad}RSET`, `RCPT TO:<a${bad}b@x.org>`, `QUIT${bad}`]) {
      expect(() => encodeCommand(text)).toThrow(UnsafeCommandError);
    }
  });
});

describe('the parser never hands a line break to SMTP', () => {
  const fields = ['address', 'asciiAddress', 'local', 'domain', 'asciiDomain'] as const;

  it.each([
    '"a\\\r\nb"@example.com',
    '"a\\\nDATA"@example.com',
    '"a\\\rb"@example.com',
    '"a\\\0b"@example.com',
    '"a\r\nb"@example.com',
    '"a\\\u2028b"@example.com',
    '"a\u2029b"@example.com',
    '"a\u0085b"@example.com',
    'a\u2028b@example.com',
    'a\u0085b@example.com',
    'a@exam\u2029ple.com',
    'a@example.com\r\n',
    'a@example.com\nRCPT TO:<b@example.com>',
    'a@[127.0.0.1]\r\n',
    'a@[IPv6:::1\r\n]',
    'a\0@example.com',
  ])('refuses %j in every profile', (input) => {
    for (const profile of ['default', 'rfc'] as const) {
      expect(parseAddress(input, { profile }).ok).toBe(false);
    }
  });

  it('yields no CR, LF, NUL or Unicode line separator in any field it passes on', () => {
    fc.assert(
      fc.property(hostile, hostile, fc.constantFrom('default', 'rfc'), (local, domain, profile) => {
        for (const input of [`${local}@${domain}`, `"${local}"@example.com`, `a@[${domain}]`]) {
          const parsed = parseAddress(input, { profile });
          if (!parsed.ok) continue;
          for (const field of fields) {
            expect(/[\0\n\r\u0085\u2028\u2029]/.test(parsed[field] ?? '')).toBe(false);
          }
        }
      }),
      fcParams(),
    );
  });
});

describe('the session state machine', () => {
  it('ends a session with unsafe_command instead of writing a recipient with CRLF', () => {
    const session = new ProbeSession({
      heloName: 'probe.example.net',
      mailFrom: 'probe@example.net',
      recipients: [
        { address: 'ann@example.org', smtpUtf8: false },
        { address: 'bob@example.org>\r\nDATA\r\n', smtpUtf8: false },
      ],
      startTls: false,
      recipientsPerTransaction: 10,
    });
    const writes: string[] = [];
    const record = (actions: readonly SessionAction[]) => {
      for (const action of actions) if (action.type === 'write') writes.push(action.data);
    };
    const reply = (code: number, ...lines: string[]) => ({
      code,
      enhanced: null,
      text: lines.join(' '),
      lines,
    });
    record(session.onReply(reply(220, 'hi')));
    record(session.onReply(reply(250, 'hi', 'PIPELINING')));
    for (let i = 0; i < 4 && !session.done; i++) record(session.onReply(reply(250, 'ok')));
    expect(session.failure).toBe('unsafe_command');
    for (const write of writes) {
      // A pipelined group is several commands in one write: each must be one whole line.
      for (const line of write.split('\r\n').slice(0, -1)) expect(RAW_BREAK.test(line)).toBe(false);
      expect(write.endsWith('\r\n')).toBe(true);
    }
    expect(writes.join('')).not.toContain('DATA');
  });
});

describe('configuration', () => {
  it.each([
    ['heloName', { heloName: 'probe.example.net\r\nRSET', mailFrom: 'p@example.net' }],
    ['heloName', { heloName: 'probe.example.net\n', mailFrom: 'p@example.net' }],
    ['heloName', { heloName: 'probe\0.example.net', mailFrom: 'p@example.net' }],
    ['heloName', { heloName: 'probe\r.example.net', mailFrom: 'p@example.net' }],
    ['mailFrom', { heloName: 'probe.example.net', mailFrom: 'p@example.net>\r\nDATA' }],
    ['mailFrom', { heloName: 'probe.example.net', mailFrom: 'p@example.net\n' }],
    ['mailFrom', { heloName: 'probe.example.net', mailFrom: 'p\0@example.net' }],
  ])('createNodeSmtp refuses a %s with CR, LF or NUL when built', (name, options) => {
    expect(() => createNodeSmtp({ ...options, onWarning: () => undefined })).toThrow(
      new RegExp(`smtp ${name} must be`),
    );
  });

  // createEngine builds the prober lazily: the names are checked when it is called, not at
  // the first smtp verify (where they surfaced as a TypeError from verify).
  it('createEngine refuses a heloName or mailFrom with CRLF when built', () => {
    expect(() =>
      createEngine({
        dns: createMemoryDns(),
        smtpOptions: { heloName: 'probe.example.net\r\nRSET', mailFrom: 'p@example.net' },
      }),
    ).toThrow(TypeError);
    expect(() =>
      createEngine({
        dns: createMemoryDns(),
        smtpOptions: { heloName: 'probe.example.net', mailFrom: 'p@example.net\r\nDATA' },
      }),
    ).toThrow(TypeError);
  });
});

describe('on the wire, against a server on loopback', () => {
  let server: LineServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('sends no injected command for a recipient carrying CR, LF or NUL', async () => {
    server = await startLineServer(() => null);
    const prober = createNodeSmtp({
      heloName: 'probe.example.net',
      mailFrom: 'probe@example.net',
      port: server.port,
      allowPrivateNetworks: true,
      resolveHost: async () => ['127.0.0.1'],
      onWarning: () => undefined,
    });
    const report = await prober.probe({
      domain: 'example.org',
      hosts: ['mx.example.org'],
      recipients: [
        { address: 'x@example.org>\r\nDATA\r\nSubject: hi', smtpUtf8: false },
        { address: 'y@example.org\nRSET', smtpUtf8: false },
        { address: 'z@example.org\rQUIT', smtpUtf8: false },
        { address: 'n@example.org\0', smtpUtf8: false },
      ],
    });
    expect(report.recipients.map((answer) => answer.class)).not.toContain('accepted');
    // The session did reach the server: the refusal is ours, after EHLO, before any RCPT.
    expect(server.commands[0]).toBe('EHLO probe.example.net');
    for (const command of server.commands) {
      expect(command).not.toMatch(/[\0\r]/);
      expect(command).toMatch(/^(?:EHLO|HELO|MAIL FROM:|RCPT TO:|RSET|QUIT|STARTTLS)/);
    }
    expect(server.commands.some((command) => /^(?:DATA|Subject)/i.test(command))).toBe(false);
  });
});
