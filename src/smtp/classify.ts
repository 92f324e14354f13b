import type { ReplyClass } from '../ports/smtp.js';
import type { SmtpReply } from './reply.js';

// The classes a reply falls in, each with what it means, are the SMTP port's (ReplyClass):
// this file is the one place that reads codes and texts to decide them.
export type { ReplyClass };

/** A reply as the rules read it: the RFC 3463 code split up, wherever the server put it. */
interface Reading {
  readonly code: number;
  /** X.Y.Z's Y (subject) and Z (detail); -1 when the reply has no enhanced code. */
  readonly subject: number;
  readonly detail: number;
  readonly text: string;
}

type Rule = readonly [test: (reply: Reading) => boolean, verdict: ReplyClass];

// ---------------------------------------------------------------------------------------------
// Texts. Every pattern is an alternation of words with no nested or adjacent quantifiers, so
// it runs in linear time on a 64 KiB reply. Each names the servers whose wording it covers.
// ---------------------------------------------------------------------------------------------

/**
 * About US, not the recipient: RBLs (Spamhaus, SpamCop, SORBS, Barracuda BRBL, Trend Micro
 * RBL+, NiX Spam), reputation (Gmail, Outlook.com, Yahoo), policy, relay (Exchange "Unable to
 * relay", Postfix "Relay access denied", qmail rcpthosts), our client/IP/HELO/PTR, SPF/DKIM/DMARC,
 * rate limits, and greetings that refuse the connection (RFC 5321 3.1: 554 banner).
 */
const ABOUT_US =
  /\b(?:spam\w*|rbl|dnsbl|blacklist\w*|black list\w*|blocklist\w*|block list\w*|blocked|block|banned|reputation|polic(?:y|ies)|relay\w*|rcpthosts|client|(?:helo|ehlo)\w*|abuse|denied|deny|prohibited|not allowed|not permitted|unauthori[sz]ed|not authori[sz]ed|unauthenticated|authentication|spf|dkim|dmarc|ptr|reverse dns|your hostname|rate limit\w*|unusual rate|too many (?:connections|messages|concurrent)|excessive|complaints|unsolicited|sending ip|ip address\w*|ip|not accepting|no smtp service|service (?:currently )?unavailable|service not available|connections? (?:will )?not (?:be )?accepted)\b|\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b/i;

/** About our envelope sender: Postfix, Exim's sender callout, Yahoo's unresolvable MAIL FROM. */
const ABOUT_SENDER =
  /\bsender (?:address|domain|verif\w*|rejected|denied|not)\b|\benvelope (?:from|sender)\b|\bfrom domain\b|\bmail from\b|\breturn[- ]path\b/i;

/** DESIGN 3.3: a text naming a sender at all is not about the recipient alone. */
const SENDER_WORD = /\bsenders?\b/i;

/** Said explicitly about our sender, so it outweighs an X.1.1 Postfix puts on it. */
const SENDER_REJECTED = /sender address rejected|sender verif\w* failed/i;

/** Greylisting by name: postgrey, sqlgrey, milter-greylist, Exim greylistd, rspamd. */
const GREYLISTING = /gr[ae]y-?\s?list|postgrey|sqlgrey/i;

/** The generic "come back" of greylisting (rspamd, hMailServer, Exim ACLs, Gmail 4.7.x). */
const TRY_LATER = /\b(?:try (?:again |back )?later|come back later|retry later)\b/i;

/** ...unless the server says what went wrong: Exim "Temporary local problem - please try later". */
const SERVER_TROUBLE = /\b(?:problem|error|failure|busy|resources?|unavailable|overload\w*)\b/i;

/** Over quota: Gmail, iCloud, Yahoo "This account is over quota", Exchange "Mailbox full". */
const FULL =
  /\b(?:quota|over ?quota|mailbox (?:is )?full|full mailbox|inbox is full|account is full|out of storage|exceeded storage|storage (?:limit|space) exceeded)\b/i;

/** Closed but existing: Gmail "inactive", Yahoo "no longer valid", AOL "mailbox is disabled". */
const DISABLED =
  /\b(?:disabled|deactivated|inactive|suspended|no longer (?:valid|active|available|in use)|(?:user|account|mailbox) (?:is |has been )?(?:locked|closed|terminated))\b/i;

/**
 * The many ways of saying "no such mailbox": Postfix "User unknown in ... table", Exim
 * "Unrouteable address", Sendmail "User unknown"/"Host unknown", qmail "no mailbox here by that
 * name", Exchange "RecipientNotFound", Yahoo "doesn't have a yahoo.com account", Dovecot "User
 * doesn't exist", Domino "not listed in", "refused: user invalid", QQ/163/Mimecast/OpenSMTPD
 * variants.
 */
const NO_SUCH_MAILBOX =
  /\b(?:(?:user|address|addressee|recipient|mailbox) unknown|unknown (?:user|recipient|mailbox|address|or illegal)|no such (?:user|mailbox|recipient|address|account)|not exists?|doesn't exist|does not exist|invalid (?:recipient|mailbox|address|user)|(?:user|recipient|mailbox) invalid|recipient ?not ?found|mailbox not found|user not found|user \S+ (?:not found|unknown)|no mailbox here|not a valid (?:mailbox|user|recipient)|have an? \S+ account|unroutable address|unrouteable address|no longer on server|not listed in|host unknown|host not found|undeliverable address)\b/i;

const TOO_MANY_RECIPIENTS = /\btoo many recipients\b/i;

/** Rate words that turn a Gmail "550 5.2.1 ... receiving mail at a rate" into no verdict. */
const RATE = /\b(?:rate|too quickly)\b/i;

// ---------------------------------------------------------------------------------------------
// The rules: tests on the RFC 3463 code (X.subject.detail) and the text, in tables where the
// first rule that matches wins. The enhanced code decides before the text (DESIGN 3.2).
// ---------------------------------------------------------------------------------------------

const has = (subject: number, detail?: number) => (r: Reading) =>
  r.subject === subject && (detail === undefined || r.detail === detail);
const text = (pattern: RegExp) => (r: Reading) => pattern.test(r.text);
const both =
  (...tests: ReadonlyArray<(r: Reading) => boolean>) =>
  (r: Reading) =>
    tests.every((test) => test(r));
const either =
  (...tests: ReadonlyArray<(r: Reading) => boolean>) =>
  (r: Reading) =>
    tests.some((test) => test(r));
const not = (test: (r: Reading) => boolean) => (r: Reading) => !test(r);
/** An enhanced code that carries a meaning; X.0.0, X.1.0 and X.2.0 leave it to the text. */
const meaningful = (r: Reading) =>
  r.subject > 0 && !((r.subject === 1 || r.subject === 2) && r.detail === 0);
const isCode =
  (...codes: number[]) =>
  (r: Reading) =>
    codes.includes(r.code);
const always = () => true;

const ourSender = either(has(1, 7), has(1, 8));

/**
 * Temporary replies to RCPT (4xx), and 552 which RFC 5321 4.5.3.1.10 says to read as 452.
 * In order:
 */
const RCPT_TRANSIENT: readonly Rule[] = [
  // RFC 5321 4.5.3.1.10 / RFC 3463 X.5.3: not an answer; ask again in a new transaction.
  [either(has(5, 3), text(TOO_MANY_RECIPIENTS)), 'too_many_recipients'],
  // postgrey "450 4.2.0 ... Greylisted, see ...", "Delayed by postgrey", Exim greylist ACLs.
  [text(GREYLISTING), 'greylisted'],
  // The enhanced code decides before the text (DESIGN 3.2). Postfix 450 4.1.8 "Sender address
  // rejected: Domain not found", delayed to RCPT, is about our sender.
  [ourSender, 'sender_refused'],
  // Gmail 452 4.2.2 "The recipient's inbox is out of storage space".
  [has(2, 2), 'mailbox_full'],
  // X.7.x is policy; a bare "4.7.1 Try again later" is rspamd's and Gmail's greylisting.
  [both(has(7), text(TRY_LATER), not(either(text(ABOUT_US), text(SERVER_TROUBLE)))), 'greylisted'],
  // Outlook.com "450 4.7.3 Organization queue quota exceeded" is policy, not a full mailbox.
  [has(7), 'blocked'],
  // Any other enhanced code: 4.1.2 domain not found this time, 4.2.1 rate, 4.3.x, 4.4.x.
  [meaningful, 'temporary'],
  // Without a decisive code, the text: Yahoo 451 "unresolvable RFC.5321 from domain".
  [text(ABOUT_SENDER), 'sender_refused'],
  // MDaemon "552 ... exceeded storage allocation", Juno "Mail quota exceeded".
  [text(FULL), 'mailbox_full'],
  // Web.de "450 Reject due to policy violations", Zoho "restricted by policy", Barracuda.
  [text(ABOUT_US), 'blocked'],
  // hMailServer "451 Please try again later.": DESIGN 3.3, 450/451 greylisting texts.
  [both(isCode(450, 451), text(TRY_LATER), not(text(SERVER_TROUBLE))), 'greylisted'],
  // RFC 5321 4.5.3.1.10: 452 is the "too many recipients" reply unless it speaks of quota.
  [isCode(452, 552), 'too_many_recipients'],
  [always, 'temporary'],
];

/** Permanent replies to RCPT (5xx but 552). In order: */
const RCPT_PERMANENT: readonly Rule[] = [
  // DESIGN 3.2: X.7.x is policy, whatever the text says (Postfix "554 5.7.1 Recipient address
  // rejected: Access denied", Yandex "550 5.7.1 No such user!", Spamhaus, Gmail 5.7.x).
  [has(7), 'blocked'],
  // RFC 3463 X.1.7/X.1.8 are our sender; Postfix also says so in words under an X.1.1.
  [either(ourSender, text(SENDER_REJECTED)), 'sender_refused'],
  [has(5, 3), 'too_many_recipients'],
  [has(2, 2), 'mailbox_full'],
  // X.1.1 bad mailbox, X.1.2 bad domain, X.1.3 bad address syntax, X.1.6 moved (iCloud "no
  // longer on server"), X.1.10 Exchange "RecipientNotFound".
  [either(has(1, 1), has(1, 2), has(1, 3), has(1, 6), has(1, 10)), 'rejected'],
  // X.2.1 disabled, except Gmail's "receiving mail at a rate that prevents...": a rate says
  // nothing about the mailbox (DESIGN 3, principle).
  [both(has(2, 1), text(RATE)), 'refused'],
  [has(2, 1), 'disabled'],
  // Any other meaningful code (X.3 system, X.4 routing such as Exchange Online's 5.4.1, X.5
  // protocol such as Outlook.com's "550 5.5.0 mailbox unavailable", X.6 content): unknown.
  [meaningful, 'refused'],
  // Without a decisive code, the text: anything about us first (DESIGN 3.3).
  [text(ABOUT_US), 'blocked'],
  [text(ABOUT_SENDER), 'sender_refused'],
  [text(FULL), 'mailbox_full'],
  // "No such user or sender": whose? Not certainly the mailbox's (DESIGN 3.3).
  [text(SENDER_WORD), 'refused'],
  [text(DISABLED), 'disabled'],
  // Only the codes that mean "mailbox unavailable/not allowed/failed" name a missing mailbox.
  [both(isCode(550, 551, 553, 554), text(NO_SUCH_MAILBOX)), 'rejected'],
  [text(TOO_MANY_RECIPIENTS), 'too_many_recipients'],
  // RFC 5321 4.2.2's generic "550 mailbox unavailable" covers policy refusals too: unknown.
  [always, 'refused'],
];

/** Failures of the banner, EHLO/HELO, MAIL FROM or RSET: never about a mailbox (DESIGN 3.1). */
const SESSION_TRANSIENT: readonly Rule[] = [
  // The same reading as RCPT_TRANSIENT, less what only a recipient can be (quota, too many).
  [text(GREYLISTING), 'greylisted'],
  // Postfix 450 4.1.8 "Sender address rejected: Domain not found".
  [ourSender, 'sender_refused'],
  [both(has(7), text(TRY_LATER), not(either(text(ABOUT_US), text(SERVER_TROUBLE)))), 'greylisted'],
  [has(7), 'blocked'],
  [meaningful, 'temporary'],
  // Yahoo 451 "Message temporarily deferred due to unresolvable RFC.5321 from domain".
  [text(ABOUT_SENDER), 'sender_refused'],
  [text(ABOUT_US), 'blocked'],
  [both(isCode(450, 451), text(TRY_LATER), not(text(SERVER_TROUBLE))), 'greylisted'],
  [always, 'temporary'],
];

const SESSION_PERMANENT: readonly Rule[] = [
  // Policy: Gmail 5.7.x, Yahoo [BL21], Proofpoint "Blocked", Exchange "Client was not
  // authenticated".
  [has(7), 'blocked'],
  [either(ourSender, text(ABOUT_SENDER)), 'sender_refused'],
  // Our IP, our HELO (Gmail "501 5.5.4 HELO/EHLO argument is invalid"), a 554 greeting.
  [text(ABOUT_US), 'blocked'],
  // DESIGN 3.1: any other 5xx to MAIL FROM is our sender refused.
  [always, 'sender_refused'],
];

// qmail "(#5.1.1)" and IronPort "#5.1.0 Address rejected" carry the code inside the text.
const CODE_IN_TEXT = /(?:^|#)([245])\.(\d{1,3})\.(\d{1,3})\b/;
const ENHANCED = /^([245])\.(\d{1,3})\.(\d{1,3})$/;

/** An enhanced code at the start of a line of a multi-line reply. */
const LINE_CODE = /^([245])\.(\d{1,3})\.(\d{1,3})(?: |$)/;

function read(reply: SmtpReply): Reading {
  const code = reply.code;
  const words = typeof reply.text === 'string' ? reply.text : '';
  const klass = String(Math.floor(code / 100));
  const first =
    (typeof reply.enhanced === 'string' ? ENHANCED.exec(reply.enhanced) : null) ??
    CODE_IN_TEXT.exec(words);
  const parts = first !== null && isAboutUs(first) ? first : (aboutUs(reply, klass) ?? first);
  // RFC 3463 2: the class digit must agree with the reply code's.
  if (parts === null || parts[1] !== klass) return { code, subject: -1, detail: -1, text: words };
  return { code, subject: Number(parts[2]), detail: Number(parts[3]), text: words };
}

/**
 * A later line's code about us (X.7.x policy, X.1.7/X.1.8 our sender) in a multi-line reply:
 * "550-5.1.1 Recipient rejected / 550 5.7.1 Client host blocked" refuses us, whatever the
 * first line said (DESIGN 3: X.7.x is policy whatever the text says).
 */
function aboutUs(reply: SmtpReply, klass: string): RegExpExecArray | null {
  const lines = Array.isArray(reply.lines) ? reply.lines : [];
  let sender: RegExpExecArray | null = null;
  for (let i = 1; i < lines.length; i++) {
    const parts = LINE_CODE.exec((lines[i] as string).trimStart());
    if (parts === null || parts[1] !== klass || !isAboutUs(parts)) continue;
    if (parts[2] === '7') return parts;
    sender ??= parts;
  }
  return sender;
}

/** X.7.x (policy) or X.1.7/X.1.8 (our sender). */
function isAboutUs(parts: RegExpExecArray): boolean {
  return parts[2] === '7' || (parts[2] === '1' && (parts[3] === '7' || parts[3] === '8'));
}

function judge(rules: readonly Rule[], reading: Reading): ReplyClass {
  for (const [test, verdict] of rules) if (test(reading)) return verdict;
  return 'invalid';
}

/**
 * Classifies the reply to RCPT TO: the only reply that may judge a mailbox.
 *
 * @example
 * classifyRcpt(reply); // 550 5.1.1 ... User unknown -> 'rejected'; 554 5.7.1 ... -> 'blocked'
 */
export function classifyRcpt(reply: SmtpReply): ReplyClass {
  const code = reply.code;
  if (code === 250 || code === 251) return 'accepted';
  if (code === 252) return 'cannot_verify';
  if (code === 421) return 'try_next_mx';
  if (!Number.isInteger(code)) return 'invalid';
  // RFC 5321 4.5.3.1.10: a 552 to RCPT is read as 452.
  if ((code >= 400 && code < 500) || code === 552) return judge(RCPT_TRANSIENT, read(reply));
  if (code >= 500 && code < 600) return judge(RCPT_PERMANENT, read(reply));
  return 'invalid';
}

/**
 * Classifies a failure of the banner, EHLO/HELO, MAIL FROM or RSET. Never `rejected`: these
 * replies are about us, so at worst every address of the session stays unknown. Success codes
 * are the caller's to check; they come back `invalid`.
 *
 * @example
 * classifySession(reply); // 550 5.1.7 ... -> 'sender_refused'; 554 5.7.1 ... -> 'blocked'
 */
export function classifySession(reply: SmtpReply): ReplyClass {
  const code = reply.code;
  if (code === 421) return 'try_next_mx';
  if (!Number.isInteger(code)) return 'invalid';
  if (code >= 400 && code < 500) return judge(SESSION_TRANSIENT, read(reply));
  if (code >= 500 && code < 600) return judge(SESSION_PERMANENT, read(reply));
  return 'invalid';
}
