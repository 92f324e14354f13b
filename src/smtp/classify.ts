import { isAtext } from '../address/local-part.js';
import { isLdhCode } from '../address/unicode.js';
import type { ReplyClass } from '../ports/smtp.js';
import type { SmtpReply } from './reply.js';

/**
 * How a reply is read: the one place that reads reply codes and texts to decide its class
 * (ReplyClass, the SMTP port's, says what each class means), on one principle: **a reply
 * judges the mailbox only when it is a reply to RCPT and is about the recipient** (RFC 5321
 * 4.2.2's 550 covers "mailbox not found" and "command rejected for policy reasons" alike, so
 * the code alone rarely decides). Anything about us (our IP, HELO, sender, reputation, a
 * policy, relaying, our rate) means we could not find out: unknown, never rejected. Only the
 * server's own words are read: every address and path it echoes (the recipient's, ours) is
 * taken out of the text before any rule looks at it, so a mailbox named `relay@` or a domain
 * named `ip-law.example` never reads as "about us".
 *
 * The RFC 3463 enhanced code, when there is one, decides before the text, with two
 * exceptions: a policy code (X.7.x) on a 5xx whose text says in no-such-mailbox words that
 * the recipient does not exist, and nothing about us, is a missing mailbox (Yandex "550 5.7.1
 * No such user!", qmail "(#5.7.17) no mailbox here by that name"); and a provider's
 * documented marker of a missing recipient decides as the provider documents it (Exchange
 * Online's "AS(201806281)"). A limit on our client (X.7.x, our IP, a rate) decides before
 * RFC 5321 4.5.3.1.10's "too many recipients", so a rate limit on us is never retried.
 */
export type { ReplyClass };

/**
 * The addresses we sent, which a server may repeat back: the RCPT's recipient and our MAIL
 * FROM. Any address- or path-shaped text is taken out whether or not it is one of these
 * (servers change case, add quotes, punycode); these add the domains, which some servers echo
 * alone ("This user doesn't have a yahoo.com account").
 */
export interface SentAddresses {
  readonly recipient?: string;
  readonly sender?: string;
}

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
// Texts. Every pattern is an alternation of words whose quantifiers cannot backtrack into
// each other (eslint's regexp/no-super-linear-* rules hold it so), so it runs in linear time
// on a 64 KiB reply. Each names the servers whose wording it covers.
// ---------------------------------------------------------------------------------------------

/** An IP address, ours as a rule ("Client host [192.0.2.1] blocked", "from 2001:db8::25"). */
const IP_ADDRESS =
  /\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b|\b[0-9a-f]{1,4}::|::[0-9a-f]{1,4}\b|\b[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){7}\b/i;

/**
 * About US, not the recipient: RBLs (Spamhaus, SpamCop, SORBS, Barracuda BRBL, Trend Micro
 * RBL+, NiX Spam), reputation (Gmail, Outlook.com, Yahoo), policy, relay (Exchange "Unable to
 * relay", Postfix "Relay access denied", qmail rcpthosts), our client/IP/HELO/PTR, SPF/DKIM/DMARC,
 * rates (Exim ratelimit ACLs "rate overlimit", QQ "ip frequency limited"), and greetings that
 * refuse the connection (RFC 5321 3.1: 554 banner).
 */
const ABOUT_US =
  /\b(?:spam\w*|rbl|dnsbl|blacklist\w*|black list\w*|blocklist\w*|block list\w*|blocked|block|banned|reputation|polic(?:y|ies)|relay\w*|rcpthosts|client|(?:helo|ehlo)\w*|abuse|denied|deny|prohibited|not allowed|not permitted|unauthori[sz]ed|not authori[sz]ed|unauthenticated|authentication|spf|dkim|dmarc|ptr|reverse dns|your hostname|rate|ratelimit\w*|overlimit|throttl\w*|frequency|too many (?:connections|messages|mails|emails|concurrent)|excessive|complaints|unsolicited|sending ip|ip address\w*|ip|not accepting|no smtp service|service (?:currently )?unavailable|service not available|connections? (?:will )?not (?:be )?accepted)\b/i;

/**
 * A limit on our client or over time, which turns "too many recipients" from RFC 5321
 * 4.5.3.1.10's transaction limit into a rate limit on us: Postfix smtpd_client_recipient_rate_limit
 * "450 4.7.1 Error: too many recipients from 192.0.2.1" (with IP_ADDRESS), "452 Too many
 * recipients received this hour", Exim ratelimit ACLs "... per 1h". Not "policy": Gmail's
 * "452 4.5.3 Domain policy size per transaction exceeded, please try this recipient in a
 * separate transaction" asks for exactly that retry.
 */
const LIMIT_ON_US =
  /\b(?:rate|ratelimit\w*|overlimit|throttl\w*|frequency|too (?:fast|quickly)|per (?:\d+ ?)?(?:second|minute|hour|day|[hmd])s?|(?:this|last|past|an?|one) (?:second|minute|hour|day)|(?:last|past) \d+ (?:second|minute|hour|day)s?|hourly|daily|today|client|sending ip|your (?:ip|host|server|network)|from (?:this|your) (?:ip|host|server|network)|ip address\w*|ip)\b/i;

/** About our envelope sender: Postfix, Exim's sender callout, Yahoo's unresolvable MAIL FROM. */
const ABOUT_SENDER =
  /\bsender (?:address|domain|verif\w*|rejected|denied|not)\b|\benvelope (?:from|sender)\b|\bfrom domain\b|\bmail from\b|\breturn[- ]path\b/i;

/** A text naming a sender at all is not about the recipient alone ("No such user or sender"). */
const SENDER_WORD = /\bsenders?\b/i;

/** Said explicitly about our sender, so it outweighs an X.1.1 Postfix puts on it. */
const SENDER_REJECTED = /sender address rejected|sender verif\w* failed/i;

/**
 * Our host and its records, which a policy reply (X.7.x) may call unknown or missing
 * ("Host not found", "PTR record does not exist", "your domain does not exist"): then the
 * no-such words are not about the recipient.
 */
const OUR_HOST = /\b(?:host(?:name)?|host name|dns|records?|your)\b/i;

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
 * variants, Yandex "No such user!", Google Workspace routing "Email doesn't exist".
 */
const NO_SUCH_MAILBOX =
  /\b(?:(?:user|address|addressee|recipient|mailbox) unknown|unknown (?:user|recipient|mailbox|address|or illegal)|no such (?:user|mailbox|recipient|address|account|domain)|not exists?|doesn't exist|does not exist|invalid (?:recipient|mailbox|address|user)|(?:user|recipient|mailbox) invalid|recipient ?not ?found|mailbox not found|user not found|user \S+ (?:not found|unknown)|no mailbox here|not a valid (?:mailbox|user|recipient)|have an? \S+ account|unroutable address|unrouteable address|no longer on server|not listed in|host unknown|host not found|undeliverable address)\b/i;

/**
 * Missing recipients as their providers document them, read whatever else the text says:
 * Microsoft's "Email non-delivery reports in Exchange Online" lists 5.4.1 "Recipient address
 * rejected: Access denied" as "the recipient's address doesn't exist" (Directory-Based Edge
 * Blocking, which marks it AS(201806281); the marker decides, not "Access denied", which is
 * Postfix's policy wording too), and 5.7.504 "Recipient address rejected: Access denied" as
 * "the recipient address that you're attempting to contact isn't valid".
 */
const DBEB_MARKER = /\bAS\(201806281\)/i;
const RECIPIENT_REJECTED = /\brecipient address rejected\b/i;

const TOO_MANY_RECIPIENTS = /\btoo many recipients\b/i;

/** Rate words that turn a Gmail "550 5.2.1 ... receiving mail at a rate" into no verdict. */
const RATE = /\b(?:rate|too quickly)\b/i;

// ---------------------------------------------------------------------------------------------
// The rules: tests on the RFC 3463 code (X.subject.detail) and the text, in tables where the
// first rule that matches wins. The enhanced code decides before the text, but for a policy
// code naming a missing recipient and the providers' documented markers.
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
const aboutUs = either(text(ABOUT_US), text(IP_ADDRESS));
const limitOnUs = either(text(LIMIT_ON_US), text(IP_ADDRESS));
/** RFC 5321 4.5.3.1.10 / RFC 3463 X.5.3: the transaction holds no more recipients. */
const transactionLimit = either(has(5, 3), text(TOO_MANY_RECIPIENTS));

/**
 * A policy code whose words say the recipient does not exist, with nothing in them about us,
 * our sender or our host: Yandex "550 5.7.1 No such user!", qmail-ldap "(#5.7.17)", Tutanota
 * "Recipient address rejected: Recipient not found".
 */
const policyNamingMissingRecipient = both(
  has(7),
  text(NO_SUCH_MAILBOX),
  not(either(aboutUs, text(ABOUT_SENDER), text(SENDER_WORD), text(OUR_HOST))),
);
const documentedMissingRecipient = either(
  text(DBEB_MARKER),
  both(has(7, 504), text(RECIPIENT_REJECTED)),
);

/**
 * Temporary replies to RCPT (4xx), and 552 which RFC 5321 4.5.3.1.10 says to read as 452.
 * In order:
 */
const RCPT_TRANSIENT: readonly Rule[] = [
  // postgrey "450 4.2.0 ... Greylisted, see ...", "Delayed by postgrey", Exim greylist ACLs.
  [text(GREYLISTING), 'greylisted'],
  // The enhanced code decides before the text (RFC 3463). Postfix 450 4.1.8 "Sender address
  // rejected: Domain not found", delayed to RCPT, is about our sender.
  [ourSender, 'sender_refused'],
  // Gmail 452 4.2.2 "The recipient's inbox is out of storage space".
  [has(2, 2), 'mailbox_full'],
  // X.7.x is policy; a bare "4.7.1 Try again later" is rspamd's and Gmail's greylisting.
  [both(has(7), text(TRY_LATER), not(either(aboutUs, text(SERVER_TROUBLE)))), 'greylisted'],
  // Policy before the retry rule: Postfix "450 4.7.1 Error: too many recipients from
  // 192.0.2.1" is a rate limit on us, and Outlook.com "450 4.7.3 Organization queue quota
  // exceeded" is not a full mailbox.
  [has(7), 'blocked'],
  // A recipient limit on our client or over time is a rate limit on us, never retried.
  [both(transactionLimit, limitOnUs), 'blocked'],
  // Not an answer: ask again in a new transaction (RFC 5321 4.5.3.1.10).
  [transactionLimit, 'too_many_recipients'],
  // Any other enhanced code: 4.1.2 domain not found this time, 4.2.1 rate, 4.3.x, 4.4.x.
  [meaningful, 'temporary'],
  // Without a decisive code, the text: Yahoo 451 "unresolvable RFC.5321 from domain".
  [text(ABOUT_SENDER), 'sender_refused'],
  // MDaemon "552 ... exceeded storage allocation", Juno "Mail quota exceeded".
  [text(FULL), 'mailbox_full'],
  // Web.de "450 Reject due to policy violations", Zoho "restricted by policy", Barracuda.
  [aboutUs, 'blocked'],
  // hMailServer "451 Please try again later.": a 450/451 greylisting text.
  [both(isCode(450, 451), text(TRY_LATER), not(text(SERVER_TROUBLE))), 'greylisted'],
  // RFC 5321 4.5.3.1.10: 452 is the "too many recipients" reply unless it speaks of quota.
  [both(isCode(452, 552), not(limitOnUs)), 'too_many_recipients'],
  [always, 'temporary'],
];

/** Permanent replies to RCPT (5xx but 552). In order: */
const RCPT_PERMANENT: readonly Rule[] = [
  // Documented by the provider: Exchange Online's Directory-Based Edge Blocking, 5.7.504.
  [documentedMissingRecipient, 'rejected'],
  // A policy code that says the recipient does not exist, and nothing about us.
  [policyNamingMissingRecipient, 'rejected'],
  // Any other X.7.x is policy (Postfix "554 5.7.1 Recipient address rejected: Access
  // denied", Spamhaus, Gmail 5.7.x).
  [has(7), 'blocked'],
  // RFC 3463 X.1.7/X.1.8 are our sender; Postfix also says so in words under an X.1.1.
  [either(ourSender, text(SENDER_REJECTED)), 'sender_refused'],
  [both(has(5, 3), limitOnUs), 'blocked'],
  [has(5, 3), 'too_many_recipients'],
  [has(2, 2), 'mailbox_full'],
  // X.1.1 bad mailbox, X.1.2 bad domain, X.1.3 bad address syntax, X.1.6 moved (iCloud "no
  // longer on server"), X.1.10 Exchange "RecipientNotFound".
  [either(has(1, 1), has(1, 2), has(1, 3), has(1, 6), has(1, 10)), 'rejected'],
  // X.2.1 disabled, except Gmail's "receiving mail at a rate that prevents...": a rate says
  // nothing about the mailbox.
  [both(has(2, 1), text(RATE)), 'refused'],
  [has(2, 1), 'disabled'],
  // Any other meaningful code (X.3 system, X.4 routing such as Exchange Online's 5.4.1
  // without its marker, X.5 protocol such as Outlook.com's "550 5.5.0 mailbox unavailable",
  // X.6 content): unknown.
  [meaningful, 'refused'],
  // Without a decisive code, the text: anything about us first.
  [aboutUs, 'blocked'],
  [text(ABOUT_SENDER), 'sender_refused'],
  [text(FULL), 'mailbox_full'],
  // "No such user or sender": whose? Not certainly the mailbox's.
  [text(SENDER_WORD), 'refused'],
  [text(DISABLED), 'disabled'],
  // Only the codes that mean "mailbox unavailable/not allowed/failed" name a missing mailbox.
  [both(isCode(550, 551, 553, 554), text(NO_SUCH_MAILBOX)), 'rejected'],
  [both(text(TOO_MANY_RECIPIENTS), limitOnUs), 'blocked'],
  [text(TOO_MANY_RECIPIENTS), 'too_many_recipients'],
  // RFC 5321 4.2.2's generic "550 mailbox unavailable" covers policy refusals too: unknown.
  [always, 'refused'],
];

/** Failures of the banner, EHLO/HELO, MAIL FROM or RSET: never about a mailbox. */
const SESSION_TRANSIENT: readonly Rule[] = [
  // The same reading as RCPT_TRANSIENT, less what only a recipient can be (quota, too many).
  [text(GREYLISTING), 'greylisted'],
  // Postfix 450 4.1.8 "Sender address rejected: Domain not found".
  [ourSender, 'sender_refused'],
  [both(has(7), text(TRY_LATER), not(either(aboutUs, text(SERVER_TROUBLE)))), 'greylisted'],
  [has(7), 'blocked'],
  [meaningful, 'temporary'],
  // Yahoo 451 "Message temporarily deferred due to unresolvable RFC.5321 from domain".
  [text(ABOUT_SENDER), 'sender_refused'],
  [aboutUs, 'blocked'],
  [both(isCode(450, 451), text(TRY_LATER), not(text(SERVER_TROUBLE))), 'greylisted'],
  [always, 'temporary'],
];

const SESSION_PERMANENT: readonly Rule[] = [
  // Policy: Gmail 5.7.x, Yahoo [BL21], Proofpoint "Blocked", Exchange "Client was not
  // authenticated".
  [has(7), 'blocked'],
  [either(ourSender, text(ABOUT_SENDER)), 'sender_refused'],
  // Our IP, our HELO (Gmail "501 5.5.4 HELO/EHLO argument is invalid"), a 554 greeting.
  [aboutUs, 'blocked'],
  // Any other 5xx to MAIL FROM is our sender refused (RFC 5321 4.1.1.2).
  [always, 'sender_refused'],
];

// qmail "(#5.1.1)" and IronPort "#5.1.0 Address rejected" carry the code inside the text.
const CODE_IN_TEXT = /(?:^|#)([245])\.(\d{1,3})\.(\d{1,3})\b/;
const ENHANCED = /^([245])\.(\d{1,3})\.(\d{1,3})$/;

/** An enhanced code at the start of a line of a multi-line reply. */
const LINE_CODE = /^([245])\.(\d{1,3})\.(\d{1,3})(?: |$)/;

function read(reply: SmtpReply, sent: SentAddresses | undefined): Reading {
  const code = reply.code;
  const words = serverWords(typeof reply.text === 'string' ? reply.text : '', sent);
  const klass = String(Math.floor(code / 100));
  const first =
    (typeof reply.enhanced === 'string' ? ENHANCED.exec(reply.enhanced) : null) ??
    CODE_IN_TEXT.exec(words);
  const parts =
    first !== null && isAboutUs(first) ? first : (laterCodeAboutUs(reply, klass) ?? first);
  // RFC 3463 2: the class digit must agree with the reply code's.
  if (parts === null || parts[1] !== klass) return { code, subject: -1, detail: -1, text: words };
  return { code, subject: Number(parts[2]), detail: Number(parts[3]), text: words };
}

/**
 * A later line's code about us (X.7.x policy, X.1.7/X.1.8 our sender) in a multi-line reply:
 * "550-5.1.1 Recipient rejected / 550 5.7.1 Client host blocked" refuses us, whatever the
 * first line said.
 */
function laterCodeAboutUs(reply: SmtpReply, klass: string): RegExpExecArray | null {
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

// ---------------------------------------------------------------------------------------------
// Echoes. Servers repeat what we sent: "550 5.1.1 <x@y>: Recipient address rejected", "550
// <x@y>... User unknown", "550 No such user (x@y)", "Local mailbox x@y is unavailable", "550
// 5.4.1 [x@y]: Recipient address rejected", "This user doesn't have a y account". What is in
// them is our choice of address, not the server's judgement, so each is replaced by one token
// before any rule reads the text. Scanners, not regular expressions: every character is looked
// at a bounded number of times, so a 64 KiB reply costs linear time whatever it holds.
// ---------------------------------------------------------------------------------------------

/** What an echo becomes: one token, so "user <x@y> unknown" still reads as three words. */
const ECHO = '<>';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const AT = 0x40;
const LT = 0x3c;
const GT = 0x3e;
const DOT = 0x2e;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** The text without the addresses, paths and domains it echoes. */
function serverWords(text: string, sent: SentAddresses | undefined): string {
  if (text === '') return text;
  let words = withoutPaths(withoutAddresses(text));
  const names: string[] = [];
  for (const address of [sent?.recipient, sent?.sender]) {
    const domain = domainOf(address);
    if (domain === undefined) continue;
    // An address literal echoed alone: "[192.0.2.1]", "IPv6:2001:db8::25", "2001:db8::25".
    if (domain.startsWith('[')) {
      const inside = domain.slice(1, -1);
      words = withoutLiteral(words, inside);
      if (inside.startsWith('ipv6:')) words = withoutLiteral(words, inside.slice(5));
    } else {
      names.push(domain);
    }
  }
  return names.length === 0 ? words : withoutDomains(words, names);
}

/**
 * Replaces every `local@domain` (RFC 5321 4.1.2: a dot-string or quoted local part, a domain or
 * address literal; an empty side too, as in source routes `@relay:`) by ECHO. Each '@' widens
 * left over local-part characters and right over domain characters, never back past the end
 * of the previous one, so no character is scanned twice.
 */
function withoutAddresses(text: string): string {
  let out = '';
  let copied = 0;
  let floor = 0;
  for (let at = text.indexOf('@'); at >= 0; at = text.indexOf('@', floor)) {
    const start = localPartStart(text, at, floor);
    const end = domainEnd(text, at + 1);
    if (start < at || end > at + 1) {
      out += text.slice(copied, start) + ECHO;
      copied = end;
    }
    floor = Math.max(end, at + 1);
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** Where the local part ending before `at` starts, no further left than `floor`. */
function localPartStart(text: string, at: number, floor: number): number {
  if (at - 1 >= floor && text.charCodeAt(at - 1) === QUOTE) {
    // A quoted local part ("john smith"@x): back to its opening quote, if there is one.
    for (let i = at - 2; i >= floor; i--) {
      if (text.charCodeAt(i) === QUOTE && (i === floor || text.charCodeAt(i - 1) !== BACKSLASH)) {
        return i;
      }
    }
    return at;
  }
  let start = at;
  while (start > floor && isLocalPartChar(text.charCodeAt(start - 1))) start--;
  return start;
}

/** Where the domain or address literal starting at `from` ends. */
function domainEnd(text: string, from: number): number {
  if (text.charCodeAt(from) === OPEN_BRACKET) {
    for (let i = from + 1; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === CLOSE_BRACKET) return i + 1;
      if (c <= 0x20 || c === LT || c === GT || c === AT || c === OPEN_BRACKET) break;
    }
    return from;
  }
  let end = from;
  while (end < text.length && isDomainChar(text.charCodeAt(end))) end++;
  return end;
}

/**
 * Replaces every angle-bracketed token without spaces, `<>` and `<localpart>` included, by
 * ECHO: paths the server repeats, whatever they hold (our HELO name too).
 */
function withoutPaths(text: string): string {
  let out = '';
  let copied = 0;
  for (let lt = text.indexOf('<'); lt >= 0;) {
    let i = lt + 1;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === GT || c === LT || c <= 0x20) break;
      i++;
    }
    if (i < text.length && text.charCodeAt(i) === GT) {
      out += text.slice(copied, lt) + ECHO;
      copied = i + 1;
      lt = text.indexOf('<', copied);
    } else {
      lt = text.indexOf('<', i);
    }
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Replaces every run of domain characters that is one of `domains` or a name under one of
 * them (a host of the recipient's own domain) by ECHO.
 */
function withoutDomains(text: string, domains: readonly string[]): string {
  let out = '';
  let copied = 0;
  for (let i = 0; i < text.length;) {
    if (!isDomainChar(text.charCodeAt(i))) {
      i++;
      continue;
    }
    let next = i;
    while (next < text.length && isDomainChar(text.charCodeAt(next))) next++;
    let end = next;
    while (end > i && text.charCodeAt(end - 1) === DOT) end--;
    const name = text.slice(i, end).toLowerCase();
    if (domains.some((domain) => name === domain || name.endsWith(`.${domain}`))) {
      out += text.slice(copied, i) + ECHO;
      copied = end;
    }
    i = next;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Replaces every occurrence of an address literal's text (lower-cased), not within a longer
 * address, by ECHO. Each search starts after the last, so the text is read once per literal.
 */
function withoutLiteral(text: string, literal: string): string {
  if (literal === '') return text;
  const lower = text.toLowerCase();
  // Lower-casing keeps the length of any text an address literal can match in.
  if (lower.length !== text.length) return text;
  let out = '';
  let copied = 0;
  for (let at = lower.indexOf(literal); at >= 0; at = lower.indexOf(literal, at + 1)) {
    const end = at + literal.length;
    if (
      at < copied ||
      isLiteralChar(lower.charCodeAt(at - 1)) ||
      isLiteralChar(lower.charCodeAt(end))
    ) {
      continue;
    }
    out += text.slice(copied, at) + ECHO;
    copied = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** The domain of an address we sent, lower-cased (an address literal with its brackets). */
function domainOf(address: string | undefined): string | undefined {
  if (typeof address !== 'string' || !address.includes('@')) return undefined;
  const domain = address.slice(address.lastIndexOf('@') + 1).toLowerCase();
  if (domain.startsWith('[')) return domain.endsWith(']') && domain.length > 2 ? domain : undefined;
  return domain === '' ? undefined : domain;
}

/** Characters of an IP address's text: hex digits, '.' and ':'. */
function isLiteralChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x3a) || c === DOT || (c >= 0x61 && c <= 0x66);
}

/** RFC 5322 atext and '.', and any non-ASCII character (RFC 6531 UTF-8 local parts). */
function isLocalPartChar(c: number): boolean {
  return c >= 0x80 || c === DOT || isAtext(c);
}

/** Letters, digits, '-', '.', '_' and any non-ASCII character (U-labels). */
function isDomainChar(c: number): boolean {
  return c >= 0x80 || c === DOT || c === 0x5f || isLdhCode(c);
}

function judge(rules: readonly Rule[], reading: Reading): ReplyClass {
  for (const [test, verdict] of rules) if (test(reading)) return verdict;
  return 'invalid';
}

/**
 * Classifies the reply to RCPT TO: the only reply that may judge a mailbox. `sent` names the
 * recipient and our sender, so that a domain the server echoes alone is not read either.
 *
 * @example
 * classifyRcpt(reply); // 550 5.1.1 ... User unknown -> 'rejected'; 554 5.7.1 ... -> 'blocked'
 * classifyRcpt(reply, { recipient: 'relay@ip-law.example' }); // 550 No such user (relay@...)
 */
export function classifyRcpt(reply: SmtpReply, sent?: SentAddresses): ReplyClass {
  const code = reply.code;
  if (code === 250 || code === 251) return 'accepted';
  if (code === 252) return 'cannot_verify';
  if (code === 421) return 'try_next_mx';
  if (!Number.isInteger(code)) return 'invalid';
  // RFC 5321 4.5.3.1.10: a 552 to RCPT is read as 452.
  if ((code >= 400 && code < 500) || code === 552) return judge(RCPT_TRANSIENT, read(reply, sent));
  if (code >= 500 && code < 600) return judge(RCPT_PERMANENT, read(reply, sent));
  return 'invalid';
}

/**
 * Whether a reply that ends the session (a 421, RFC 5321 3.8) speaks of us: our IP, a rate, a
 * policy ("421-4.7.0 ... unusual rate of unsolicited mail originating from your IP address").
 * Another MX may still be tried, but this host asked us to go away, so no new session asks it
 * again: that would add load to a server that asked us to slow down. A 421 that only counts
 * ("Too many recipients, closing connection", "Error: too many errors") does not.
 */
export function endsOnUs(reply: SmtpReply, sent?: SentAddresses): boolean {
  const reading = read(reply, sent);
  return either(aboutUs, limitOnUs)(reading);
}

/**
 * Classifies a failure of the banner, EHLO/HELO, MAIL FROM or RSET. Never `rejected`: these
 * replies are about us, so at worst every address of the session stays unknown. Success codes
 * are the caller's to check; they come back `invalid`.
 *
 * @example
 * classifySession(reply); // 550 5.1.7 ... -> 'sender_refused'; 554 5.7.1 ... -> 'blocked'
 */
export function classifySession(reply: SmtpReply, sent?: SentAddresses): ReplyClass {
  const code = reply.code;
  if (code === 421) return 'try_next_mx';
  if (!Number.isInteger(code)) return 'invalid';
  if (code >= 400 && code < 500) return judge(SESSION_TRANSIENT, read(reply, sent));
  if (code >= 500 && code < 600) return judge(SESSION_PERMANENT, read(reply, sent));
  return 'invalid';
}
