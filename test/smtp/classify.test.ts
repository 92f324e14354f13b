import { describe, expect, it } from 'vitest';
import { classifyRcpt, classifySession, type ReplyClass } from '../../src/smtp/classify.js';
import { ReplyReader } from '../../src/smtp/reply.js';

const reply = (line: string) => {
  const parsed = new ReplyReader().feed(`${line}\r\n`).replies[0];
  if (parsed === undefined) throw new Error(`not a reply: ${line}`);
  return parsed;
};

// Real texts from Postfix, Exim, Exchange/Office 365, Gmail, Yahoo, Spamhaus listings.
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
  ["553 sorry, that domain isn't in my list of allowed rcpthosts", 'refused'],
  ['550 User not listed in public Name & Address Book', 'rejected'],
  ['550 5.2.1 The email account that you tried to reach is disabled.', 'disabled'],
  ['550 Mailbox inactive', 'disabled'],
  ['452 4.2.2 The email account that you tried to reach is over quota.', 'mailbox_full'],
  ['552 5.2.2 Mailbox full', 'mailbox_full'],
  ['452 Insufficient system storage', 'mailbox_full'],
  ['452 4.5.3 Too many recipients', 'temporary'],
  [
    '450 4.2.0 <bob@example.org>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/',
    'greylisted',
  ],
  ['451 4.7.1 Please try again later', 'greylisted'],
  ['450 4.1.1 <x@y>: Recipient address rejected: unverified address', 'greylisted'],
  [
    '554 5.7.1 Service unavailable; Client host [203.0.113.9] blocked using zen.spamhaus.org',
    'blocked',
  ],
  ['550 5.7.1 Message rejected due to local policy', 'blocked'],
  ['553 5.7.1 Sender address rejected: not owned by user', 'blocked'],
  ['550 5.7.606 Access denied, banned sending IP [203.0.113.9]', 'blocked'],
  ['421 4.7.0 Try again later, closing connection.', 'try_next_mx'],
  ['554 Transaction failed', 'refused'],
  ['550 Requested action not taken: mailbox unavailable', 'refused'],
  ['354 Start mail input', 'invalid'],
  ['220 hello again', 'invalid'],
];

describe('classifyRcpt', () => {
  it.each(RCPT_CASES)('%s -> %s', (line, expected) => {
    expect(classifyRcpt(reply(line))).toBe(expected);
  });

  it('never calls a block of OUR address a missing mailbox', () => {
    for (const [line, expected] of RCPT_CASES) {
      if (/spamhaus|banned|policy/i.test(line)) expect(expected).not.toBe('rejected');
    }
  });
});

describe('classifySession', () => {
  it.each<[string, ReplyClass]>([
    ['421 mx.example.org Service not available', 'try_next_mx'],
    ['554 5.7.1 Client host rejected: blocked using bl.spamcop.net', 'blocked'],
    ['554 No SMTP service here', 'refused'],
    ['451 4.3.0 Temporary lookup failure', 'greylisted'],
    ['452 4.3.1 Insufficient system storage', 'temporary'],
    ['550 5.7.1 Sender rejected', 'blocked'],
    ['250 ok', 'invalid'],
  ])('%s -> %s', (line, expected) => {
    expect(classifySession(reply(line))).toBe(expected);
  });
});
