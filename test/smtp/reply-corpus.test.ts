import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { classifyRcpt, classifySession, type ReplyClass } from '../../src/smtp/classify.js';
import { ReplyReader } from '../../src/smtp/reply.js';

/** One real reply, as a server sent it, with where it was seen and what the classifier makes of it. */
interface CorpusEntry {
  readonly server: string;
  readonly phase: 'rcpt' | 'mail' | 'banner' | 'ehlo';
  readonly reply: readonly string[];
  readonly expected: ReplyClass;
  readonly source: string;
  readonly note?: string;
}

const CORPUS: readonly CorpusEntry[] = JSON.parse(
  readFileSync(new URL('../fixtures/smtp-replies.json', import.meta.url), 'utf8'),
);

// The servers people verify against (issue 10): each must have texts in the corpus.
const FAMILIES: ReadonlyArray<readonly [string, RegExp]> = [
  ['Gmail / Google Workspace', /gmail|google/i],
  ['Outlook.com / Exchange Online', /outlook\.com|exchange online/i],
  ['Exchange on-premises', /^exchange(?! online)/i],
  ['Yahoo / AOL', /yahoo|aol/i],
  ['iCloud', /icloud/i],
  ['Yandex', /yandex/i],
  ['Mail.ru', /mail\.ru/i],
  ['GMX / Web.de', /gmx|web\.de/i],
  ['Zoho', /zoho/i],
  ['Proton', /proton/i],
  ['Fastmail', /fastmail/i],
  ['Mimecast', /mimecast/i],
  ['Proofpoint', /proofpoint/i],
  ['Barracuda', /barracuda/i],
  ['Cisco Secure Email (IronPort)', /ironport/i],
  ['Trend Micro', /trend micro/i],
  ['Postfix', /postfix/i],
  ['Exim', /exim/i],
  ['Sendmail', /sendmail/i],
  ['qmail', /qmail/i],
  ['Courier', /courier/i],
  ['Zimbra', /zimbra/i],
  ['MDaemon', /mdaemon/i],
  ['Spamhaus', /spamhaus/i],
  ['SpamCop', /spamcop/i],
  ['Barracuda BRBL', /barracuda brbl/i],
  ['SORBS', /sorbs/i],
  ['postgrey', /postgrey/i],
  ['Exim greylisting', /exim greylist/i],
  ['milter-greylist', /milter-greylist/i],
];

function parse(lines: readonly string[]) {
  const { replies, error } = new ReplyReader().feed(lines.map((line) => `${line}\r\n`).join(''));
  expect(error).toBeUndefined();
  expect(replies).toHaveLength(1);
  return replies[0]!;
}

describe('the reply corpus', () => {
  it('holds at least 150 real replies, each with its source', () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(150);
    for (const entry of CORPUS) expect(entry.source).toMatch(/^https?:\/\/\S+$/);
  });

  it.each(FAMILIES)('covers %s', (_family, pattern) => {
    expect(CORPUS.some((entry) => pattern.test(entry.server))).toBe(true);
  });

  it('has no reply twice', () => {
    const texts = CORPUS.map((entry) => entry.reply.join('\n'));
    expect(new Set(texts).size).toBe(texts.length);
  });
});

describe('classifying the corpus', () => {
  it.each(
    CORPUS.map((entry, index) => [
      `${entry.server} ${entry.phase} ${entry.reply[0]?.slice(0, 9) ?? ''} #${index}`,
      entry,
    ]),
  )('%s', (_name, entry) => {
    const reply = parse(entry.reply);
    const classify = entry.phase === 'rcpt' ? classifyRcpt : classifySession;
    expect(classify(reply), entry.reply.join('\n')).toBe(entry.expected);
  });

  it('never calls a reply to the banner, EHLO or MAIL FROM a verdict on a mailbox', () => {
    for (const entry of CORPUS.filter((e) => e.phase !== 'rcpt')) {
      expect(['rejected', 'disabled', 'accepted']).not.toContain(
        classifySession(parse(entry.reply)),
      );
    }
  });
});
