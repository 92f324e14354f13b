import { describe, expect, it } from 'vitest';
import { ReplyReader } from '../../src/smtp/reply.js';
import { ProbeSession, type SessionPlan } from '../../src/smtp/session.js';

const plan = (overrides: Partial<SessionPlan> = {}): SessionPlan => ({
  heloName: 'probe.example.net',
  mailFrom: 'verify@example.net',
  recipients: [
    { address: 'ann@example.org', smtpUtf8: false },
    { address: 'bob@example.org', smtpUtf8: false },
  ],
  startTls: true,
  recipientsPerTransaction: 20,
  ...overrides,
});

type Server = (command: string) => string;

/**
 * Plays a session against a server function (command line -> reply lines) without sockets.
 * Returns the writes, one string per write action, to show how commands were grouped.
 */
function converse(session: ProbeSession, server: Server, banner = '220 mx ESMTP') {
  const writes: string[] = [];
  const reader = new ReplyReader();
  let actions = session.onReply(reader.feed(`${banner}\r\n`).replies[0]!);
  for (let step = 0; step < 100 && actions.length > 0; step++) {
    const next = [];
    for (const action of actions) {
      if (action.type === 'close') return writes;
      if (action.type === 'start_tls') {
        next.push(...session.onTlsReady());
        continue;
      }
      writes.push(action.data);
      const commands = action.data.split('\r\n').filter(Boolean);
      const replies = commands.map((command) => server(command)).join('');
      for (const reply of reader.feed(replies).replies) next.push(...session.onReply(reply));
    }
    actions = next;
  }
  return writes;
}

const EHLO_PLAIN = '250-mx\r\n250 SIZE 10240000\r\n';
const EHLO_PIPELINING = '250-mx\r\n250-PIPELINING\r\n250 SMTPUTF8\r\n';

function server(ehloReply: string, rcpt: (address: string) => string = () => '250 ok\r\n'): Server {
  return (command) => {
    if (command.startsWith('EHLO')) return ehloReply;
    if (command.startsWith('RCPT TO:<')) return rcpt(command.slice(9, -1));
    if (command === 'QUIT') return '221 bye\r\n';
    return '250 ok\r\n';
  };
}

describe('ProbeSession', () => {
  it('asks one command at a time without PIPELINING, and never sends DATA', () => {
    const session = new ProbeSession(plan());
    const writes = converse(
      session,
      server(EHLO_PLAIN, (a) => (a.startsWith('ann') ? '250 ok\r\n' : '550 5.1.1 no\r\n')),
    );
    expect(writes).toEqual([
      'EHLO probe.example.net\r\n',
      'MAIL FROM:<verify@example.net>\r\n',
      'RCPT TO:<ann@example.org>\r\n',
      'RCPT TO:<bob@example.org>\r\n',
      'QUIT\r\n',
    ]);
    expect(session.answers.map((a) => a?.class)).toEqual(['accepted', 'rejected']);
    expect(session.failure).toBeUndefined();
    expect(session.done).toBe(true);
  });

  it('sends MAIL FROM and every RCPT of a transaction in one write with PIPELINING', () => {
    const session = new ProbeSession(plan());
    const writes = converse(session, server(EHLO_PIPELINING));
    expect(writes[1]).toBe(
      'MAIL FROM:<verify@example.net>\r\nRCPT TO:<ann@example.org>\r\nRCPT TO:<bob@example.org>\r\n',
    );
  });

  it('splits recipients into transactions with RSET between them', () => {
    const recipients = Array.from({ length: 5 }, (_, i) => ({
      address: `u${i}@example.org`,
      smtpUtf8: false,
    }));
    const session = new ProbeSession(plan({ recipients, recipientsPerTransaction: 2 }));
    const writes = converse(session, server(EHLO_PIPELINING));
    expect(writes.filter((w) => w.startsWith('RSET')).length).toBe(2);
    expect(writes.filter((w) => w.includes('MAIL FROM')).length).toBe(3);
    expect(session.answers.every((a) => a?.class === 'accepted')).toBe(true);
  });

  it('falls back to HELO when EHLO is not understood', () => {
    const session = new ProbeSession(plan());
    const writes = converse(session, (command) =>
      command.startsWith('EHLO') ? '502 5.5.2 Error: command not recognized\r\n' : '250 ok\r\n',
    );
    expect(writes[1]).toBe('HELO probe.example.net\r\n');
    expect(session.answers.map((a) => a?.class)).toEqual(['accepted', 'accepted']);
  });

  it('upgrades with STARTTLS when offered, and greets again after the handshake', () => {
    const session = new ProbeSession(plan());
    const writes = converse(session, (command) => {
      if (command.startsWith('EHLO')) {
        return session.tls ? EHLO_PLAIN : '250-mx\r\n250 STARTTLS\r\n';
      }
      if (command === 'STARTTLS') return '220 2.0.0 Ready to start TLS\r\n';
      return '250 ok\r\n';
    });
    expect(writes.slice(0, 3)).toEqual([
      'EHLO probe.example.net\r\n',
      'STARTTLS\r\n',
      'EHLO probe.example.net\r\n',
    ]);
    expect(session.tls).toBe(true);
  });

  it('goes on in plain text when STARTTLS is refused (454)', () => {
    const session = new ProbeSession(plan());
    converse(session, (command) => {
      if (command.startsWith('EHLO')) return '250-mx\r\n250 STARTTLS\r\n';
      if (command === 'STARTTLS') return '454 4.7.0 TLS not available\r\n';
      return '250 ok\r\n';
    });
    expect(session.tls).toBe(false);
    expect(session.answers.map((a) => a?.class)).toEqual(['accepted', 'accepted']);
  });

  it('does not send a UTF-8 address to a server without SMTPUTF8', () => {
    const recipients = [
      { address: 'jörg@example.org', smtpUtf8: true },
      { address: 'ann@example.org', smtpUtf8: false },
    ];
    const session = new ProbeSession(plan({ recipients }));
    const writes = converse(session, server(EHLO_PLAIN));
    expect(writes.join('')).not.toContain('jörg');
    expect(session.answers.map((a) => a?.class)).toEqual(['smtputf8_unsupported', 'accepted']);
  });

  it('marks MAIL FROM with SMTPUTF8 when a UTF-8 recipient goes to a server offering it', () => {
    const recipients = [{ address: 'jörg@example.org', smtpUtf8: true }];
    const session = new ProbeSession(plan({ recipients }));
    const writes = converse(session, server(EHLO_PIPELINING));
    expect(writes[1]).toBe(
      'MAIL FROM:<verify@example.net> SMTPUTF8\r\nRCPT TO:<jörg@example.org>\r\n',
    );
  });

  it('blames a refused MAIL FROM on the sender, not on the pipelined recipients', () => {
    const session = new ProbeSession(plan());
    converse(session, (command) => {
      if (command.startsWith('EHLO')) return EHLO_PIPELINING;
      if (command.startsWith('MAIL')) return '554 5.7.1 Sender blocked by spamhaus\r\n';
      if (command.startsWith('RCPT')) return '503 5.5.1 need MAIL first\r\n';
      return '221 bye\r\n';
    });
    expect(session.answers).toEqual([undefined, undefined]);
    expect(session.failure).toBe('blocked');
  });

  it('stops at 421 mid-dialogue and leaves the rest unanswered for the next MX', () => {
    const session = new ProbeSession(plan());
    converse(
      session,
      server(EHLO_PLAIN, (a) => (a.startsWith('ann') ? '250 ok\r\n' : '421 4.4.2 closing\r\n')),
    );
    expect(session.answers.map((a) => a?.class)).toEqual(['accepted', undefined]);
    expect(session.failure).toBe('try_next_mx');
  });

  it('sends the next MX a 4xx greeting, and a 5xx greeting to the table', () => {
    const greylisted = new ProbeSession(plan());
    converse(greylisted, server(EHLO_PLAIN), '450 too busy');
    expect(greylisted.failure).toBe('try_next_mx');
    const blocked = new ProbeSession(plan());
    converse(blocked, server(EHLO_PLAIN), '554 5.7.1 your IP is listed on zen.spamhaus.org');
    expect(blocked.failure).toBe('blocked');
  });

  it('tells a server that never greeted (a tarpit) from one that did', () => {
    const tarpit = new ProbeSession(plan());
    tarpit.onError('timeout');
    expect([tarpit.failure, tarpit.greeted]).toEqual(['timeout', false]);
    const greeted = new ProbeSession(plan());
    converse(greeted, server(EHLO_PLAIN));
    expect(greeted.greeted).toBe(true);
  });

  it('ends a session that talks out of turn or fails, and ignores anything after the end', () => {
    const session = new ProbeSession(plan());
    session.onError('timeout');
    expect(session.failure).toBe('timeout');
    expect(session.done).toBe(true);
    expect(session.onError('closed')).toEqual([]);
    expect(session.failure).toBe('timeout');
  });

  it('refuses to send a recipient that carries CR or LF, ending the session cleanly', () => {
    const recipients = [{ address: 'ann@example.org>\r\nDATA', smtpUtf8: false }];
    const session = new ProbeSession(plan({ recipients }));
    const writes = converse(session, server(EHLO_PLAIN));
    expect(writes.join('')).not.toContain('DATA');
    expect(session.failure).toBe('unsafe_command');
  });
});
