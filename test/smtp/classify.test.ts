import { describe, expect, it } from 'vitest';
import { classifyRcpt, classifySession, type ReplyClass } from '../../src/smtp/classify.js';
import { ReplyReader } from '../../src/smtp/reply.js';

const reply = (line: string) => {
  const parsed = new ReplyReader().feed(`${line}\r\n`).replies[0];
  if (parsed === undefined) throw new Error(`not a reply: ${line}`);
  return parsed;
};

// One case per rule of the table; the real-world texts live in test/fixtures/smtp-replies.json.
const RCPT_CASES: Array<[string, ReplyClass]> = [
  ['250 2.1.5 Ok', 'accepted'],
  ['251 User not local; will forward', 'accepted'],
  ['252 Cannot VRFY user, but will accept message', 'cannot_verify'],
  [
    '550 5.1.1 <bob@example.org>: Recipient address rejected: User unknown in virtual mailbox table',
    'rejected',
  ],
  ['550 5.1.1 The email account that you tried to reach does not exist.', 'rejected'],
  [
    '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
    'rejected',
  ],
  ["554 delivery error: dd This user doesn't have a yahoo.com account", 'rejected'],
  ['550 No such user here', 'rejected'],
  ['550 User not listed in public Name & Address Book', 'rejected'],
  // qmail's code at the end of the text, IronPort's at its start.
  ['550 sorry, no mailbox here by that name. (#5.1.1)', 'rejected'],
  ['550 #5.1.0 Address rejected.', 'refused'],
  // qmail: the domain is not served here, so we asked it to relay.
  ["553 sorry, that domain isn't in my list of allowed rcpthosts", 'blocked'],
  ['550 5.2.1 The email account that you tried to reach is disabled.', 'disabled'],
  ['550 Mailbox inactive', 'disabled'],
  // X.2.1 with a rate: the mailbox exists and nothing was judged.
  [
    '550 5.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered.',
    'refused',
  ],
  ['452 4.2.2 The email account that you tried to reach is over quota.', 'mailbox_full'],
  ['552 5.2.2 Mailbox full', 'mailbox_full'],
  // RFC 5321 4.5.3.1.10: 452 (and 552 read as 452) is "too many recipients" without quota text.
  ['452 Insufficient system storage', 'too_many_recipients'],
  ['452 4.5.3 Too many recipients', 'too_many_recipients'],
  ['552 5.5.3 Too many recipients', 'too_many_recipients'],
  ['552 Requested mail action aborted, mailbox not found', 'too_many_recipients'],
  [
    '450 4.2.0 <bob@example.org>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/',
    'greylisted',
  ],
  ['451 4.7.1 Please try again later', 'greylisted'],
  ['451 Please try again later.', 'greylisted'],
  ['450 4.1.1 <x@y>: Recipient address rejected: unverified address', 'temporary'],
  ['451 4.3.0 Temporary lookup failure', 'temporary'],
  [
    '554 5.7.1 Service unavailable; Client host [203.0.113.9] blocked using zen.spamhaus.org',
    'blocked',
  ],
  ['550 5.7.1 Message rejected due to local policy', 'blocked'],
  ['553 5.7.1 Sender address rejected: not owned by user', 'blocked'],
  ['550 5.7.606 Access denied, banned sending IP [203.0.113.9]', 'blocked'],
  // Postfix policy and reputation texts under "Recipient address rejected": about us.
  ['554 5.7.1 <x@example.org>: Recipient address rejected: Access denied', 'blocked'],
  ['550 Recipient address rejected: your IP 203.0.113.9 has a poor reputation', 'blocked'],
  // A policy code whose words say the recipient does not exist, and nothing about us: Yandex,
  // qmail under #5.7.17, a Google Workspace routing rule (reacher's parser.rs records it).
  ['550 5.7.1 No such user!', 'rejected'],
  ['550 sorry, no mailbox here by that name. (#5.7.17)', 'rejected'],
  ["550 5.7.1 Email doesn't exist. Please forward it or send it to contact@magency.fr", 'rejected'],
  // ...but not when those words could be about us or our sender, or the reply is temporary.
  ['550 5.7.1 No such user or sender', 'blocked'],
  ['550 5.7.1 <probe.example.net>: Helo command rejected: Host not found', 'blocked'],
  ['550 5.7.1 Reverse DNS record does not exist', 'blocked'],
  ['550 5.7.1 User unknown; client [203.0.113.9] blocked', 'blocked'],
  ['550 5.7.1 Your domain does not exist', 'blocked'],
  ['450 4.7.1 No such user!', 'blocked'],
  // Microsoft's documented markers (Email non-delivery reports in Exchange Online): DBEB's
  // AS(201806281) and 5.7.504 are "recipient not found / not valid"; 5.7.505 "banned
  // recipient" is a ban, not a missing mailbox.
  ['550 5.4.1 Recipient address rejected: Access denied. AS(201806281)', 'rejected'],
  ['550 5.7.504 [bob@example.org]: Recipient address rejected: Access denied', 'rejected'],
  ['550 5.7.505 Access denied, banned recipient', 'blocked'],
  // Rate limits on our client are not RFC 5321's "too many recipients": never retried.
  ['450 4.7.1 Error: too many recipients from 203.0.113.9', 'blocked'],
  ['450 Error: too many recipients from 203.0.113.9', 'blocked'],
  ['452 4.5.3 Too many recipients from 2001:db8::25', 'blocked'],
  ['452 Too many recipients received this hour', 'blocked'],
  ['552 5.5.3 Too many recipients per 1h for this client', 'blocked'],
  ['554 Too many recipients today', 'blocked'],
  // ...while the transaction limits, "policy" or not, are asked again.
  ['452 4.5.3 Error: too many recipients', 'too_many_recipients'],
  [
    '452 4.5.3 Domain policy size per transaction exceeded, please try this recipient in a separate transaction',
    'too_many_recipients',
  ],
  [
    "452 4.5.3 Your message has too many recipients. For more information regarding Google's sending limits, visit https://support.google.com/mail/answer/6592",
    'too_many_recipients',
  ],
  // Our sender, refused at RCPT (Postfix delays sender checks to RCPT).
  ['550 5.1.7 <me@example.net>: Sender address rejected: undeliverable address', 'sender_refused'],
  ['450 4.1.8 <me@example.net>: Sender address rejected: Domain not found', 'sender_refused'],
  [
    '550 5.1.1 <me@example.net>: Sender address rejected: User unknown in local sender table',
    'sender_refused',
  ],
  ['550-Verification failed for <me@example.net>\r\n550 Sender verify failed', 'sender_refused'],
  // A multi-line reply whose later line speaks of us: the code about us outweighs the first.
  [
    '550-5.1.1 Recipient rejected\r\n550 5.7.1 Client host [203.0.113.9] blocked using zen.spamhaus.org',
    'blocked',
  ],
  ['550-5.1.1 Recipient rejected\r\n550 5.1.8 Bad sender domain', 'sender_refused'],
  ['550-5.7.1 Client host blocked\r\n550 5.1.8 Bad sender domain', 'blocked'],
  ['550-5.1.1 The email account does not exist.\r\n550 5.1.1 Try double-checking', 'rejected'],
  // Without a code, a text that speaks of a sender is not about the mailbox alone.
  ['550 No such user or sender', 'refused'],
  ['550 Unknown user (sender 203.0.113.9)', 'blocked'],
  ['421 4.7.0 Try again later, closing connection.', 'try_next_mx'],
  ['554 Transaction failed', 'refused'],
  ['550 Requested action not taken: mailbox unavailable', 'refused'],
  ['550 5.5.0 Requested action not taken: mailbox unavailable', 'refused'],
  ['550 5.4.1 Recipient address rejected: Access denied', 'refused'],
  ['501 Invalid address', 'refused'],
  ['354 Start mail input', 'invalid'],
  ['220 hello again', 'invalid'],
];

describe('classifyRcpt', () => {
  it.each(RCPT_CASES)('%s -> %s', (line, expected) => {
    expect(classifyRcpt(reply(line))).toBe(expected);
  });

  it('never calls a block of OUR address a missing mailbox', () => {
    for (const [line, expected] of RCPT_CASES) {
      if (/spamhaus|banned|policy|reputation|sender/i.test(line)) {
        expect(expected).not.toBe('rejected');
      }
    }
  });

  it('answers replies the reader never builds without throwing', () => {
    for (const odd of [
      { code: Number.NaN, enhanced: null, text: '', lines: [] },
      { code: 550, enhanced: 'x.y.z', text: '', lines: [] },
      { code: 550, enhanced: '4.1.1', text: 'user unknown', lines: [] },
      { code: 999, enhanced: null, text: 'x'.repeat(70_000), lines: [] },
    ]) {
      expect(() => classifyRcpt(odd)).not.toThrow();
      expect(() => classifySession(odd)).not.toThrow();
    }
    // An enhanced code of another class than the reply's is no code (RFC 3463 2).
    expect(classifyRcpt({ code: 550, enhanced: '4.7.1', text: 'user unknown', lines: [] })).toBe(
      'rejected',
    );
  });
});

describe('classifyRcpt reads the server, not the addresses it echoes', () => {
  it.each<[string, string, ReplyClass]>([
    ['550 No such user (relay@ip-law.example)', 'relay@ip-law.example', 'rejected'],
    [
      '550 <abuse@client-portal.example>... User unknown',
      'abuse@client-portal.example',
      'rejected',
    ],
    [
      '550 User "spam blocked"@ehlo-systems.example unknown',
      '"spam blocked"@ehlo-systems.example',
      'rejected',
    ],
    ['550 User <relay> unknown', 'relay@ip-law.example', 'rejected'],
    ['550 User x@[203.0.113.9] unknown', 'x@[203.0.113.9]', 'rejected'],
    ['550 User @relay.example:x@ip-law.example unknown', 'x@ip-law.example', 'rejected'],
    // The recipient's domain alone: Yahoo's "doesn't have a <domain> account", sendmail's
    // "Host unknown (Name server: <domain>: host not found)".
    [
      "554 delivery error: dd This user doesn't have a client-portal.example account",
      'bob@client-portal.example',
      'rejected',
    ],
    [
      '550 <bob@ip-law.example>... Host unknown (Name server: mx.ip-law.example: host not found)',
      'bob@ip-law.example',
      'rejected',
    ],
    // An address of the server's own (a contact) is not its words either.
    ['550 No such user, write to abuse@provider.example', 'bob@ip-law.example', 'rejected'],
    // The server's own words still count around the echo.
    ['550 <relay@ip-law.example>: Relay access denied', 'relay@ip-law.example', 'blocked'],
    [
      '550 No such user (bob@ip-law.example), client 203.0.113.9 blocked',
      'bob@ip-law.example',
      'blocked',
    ],
    [
      '450 4.7.1 <policy@ip-law.example>: Recipient address rejected: try again later',
      'policy@ip-law.example',
      'greylisted',
    ],
  ])('%s (to %s) -> %s', (line, recipient, expected) => {
    expect(classifyRcpt(reply(line), { recipient, sender: 'verify@example.net' })).toBe(expected);
  });

  it('takes out echoes of any address, whether or not it is the one sent', () => {
    expect(classifyRcpt(reply('550 No such user (RELAY@IP-LAW.EXAMPLE)'))).toBe('rejected');
    expect(classifyRcpt(reply('550 User <spam@xn--bcher-kva.example> unknown'))).toBe('rejected');
  });

  it('reads the domain alone only as the echo of one we sent', () => {
    const line = "554 delivery error: dd This user doesn't have a client-portal.example account";
    expect(classifyRcpt(reply(line))).toBe('blocked');
    expect(classifyRcpt(reply(line), { recipient: 'bob@client-portal.example' })).toBe('rejected');
  });
});

describe('classifySession', () => {
  it.each<[string, ReplyClass]>([
    ['421 mx.example.org Service not available', 'try_next_mx'],
    ['554 5.7.1 Client host rejected: blocked using bl.spamcop.net', 'blocked'],
    // RFC 5321 3.1: a 554 greeting refuses this client.
    ['554 No SMTP service here', 'blocked'],
    ['451 4.3.0 Temporary lookup failure', 'temporary'],
    ['452 4.3.1 Insufficient system storage', 'temporary'],
    ['450 4.2.0 Greylisted, please retry in 5 minutes', 'greylisted'],
    ['451 4.7.1 Try again later', 'greylisted'],
    ['450 4.1.8 <me@example.net>: Sender address rejected: Domain not found', 'sender_refused'],
    ['550 5.7.1 Sender rejected', 'blocked'],
    ['553 5.1.7 The sender address is not a valid RFC 5321 address.', 'sender_refused'],
    // A 5xx to MAIL FROM never judges a mailbox, even worded as an unknown user.
    ['550 5.1.1 <me@example.net>: User unknown in local sender table', 'sender_refused'],
    // Postfix smtpd_client_message_rate_limit: our client, whatever our sender's name.
    ['450 4.7.1 Error: too much mail from 203.0.113.9', 'blocked'],
    ['550 <spam@example.net>: Sender address rejected: not owned by user', 'sender_refused'],
    ['501 5.5.4 HELO/EHLO argument is invalid.', 'blocked'],
    ['554 Transaction failed', 'sender_refused'],
    ['250 ok', 'invalid'],
  ])('%s -> %s', (line, expected) => {
    expect(classifySession(reply(line))).toBe(expected);
  });
});
