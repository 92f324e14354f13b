import type { SmtpReply } from './reply.js';

/**
 * What a reply says about a mailbox (for RCPT) or about the session (for the banner, EHLO,
 * MAIL FROM). The one place that reads codes and texts; DESIGN 3 is its contract.
 *
 * - accepted: 250/251, the mailbox takes mail.
 * - rejected: the mailbox does not exist (5.1.x, "user unknown" and its many spellings).
 * - disabled: the mailbox exists but is closed (5.2.1, "disabled", "inactive").
 * - mailbox_full: over quota (452/552, 4.2.2/5.2.2, quota texts).
 * - greylisted: come back later (450/451, greylisting texts).
 * - cannot_verify: 252, the server will try but will not say.
 * - blocked: the server refuses US (5.7.x, RBLs, Spamhaus, "blocked"): says nothing about the
 *   mailbox, so it is unknown, never rejected.
 * - sender_refused: our envelope sender is refused (X.1.7, X.1.8, any 5xx to MAIL FROM): unknown
 *   for every recipient of the session.
 * - too_many_recipients: not an answer (X.5.3, 452): the recipient must be asked again in a new
 *   transaction (RFC 5321 4.5.3.1.10).
 * - try_next_mx: 421, this host is going away; another MX may answer.
 * - temporary: any other 4xx.
 * - refused: a 5xx we cannot attribute to the mailbox; unknown, not rejected.
 * - invalid: not an answer SMTP allows here.
 */
export type ReplyClass =
  | 'accepted'
  | 'rejected'
  | 'disabled'
  | 'mailbox_full'
  | 'greylisted'
  | 'cannot_verify'
  | 'blocked'
  | 'sender_refused'
  | 'too_many_recipients'
  | 'try_next_mx'
  | 'temporary'
  | 'refused'
  | 'invalid';

// Texts of servers that refuse the sender, not the recipient. Checked first: "550 5.1.1 ...
// blocked" is rare, "554 ... blocked using zen.spamhaus.org ... user" is not.
const WE_ARE_BLOCKED =
  /spamhaus|spamcop|barracuda|\brbl\b|\bdnsbl\b|blacklist|blocklist|block list|black list|\bblocked\b|\bbanned\b|\blisted\b|reputation|not allowed to send|access denied|client host rejected|sender (?:address )?rejected|too many connections|rate limit|try again in|\bpolicy\b|\babuse\b|\bspam\b/i;

const GREYLISTED = /gr[ae]y-?list|try again later|deferred/i;

const FULL =
  /quota|mailbox (?:is )?full|over ?quota|exceeded storage|insufficient (?:system )?storage|storage limit/i;

const DISABLED =
  /disabled|deactivated|inactive|suspended|no longer (?:active|available)|account (?:is )?locked/i;

// The many ways of saying "no such mailbox": Postfix, Exim, Exchange, Gmail, Yahoo, qmail...
const NO_SUCH_USER =
  /user unknown|unknown user|no such (?:user|mailbox|recipient|address)|does not exist|doesn't exist|not exist|unknown (?:recipient|mailbox|address)|recipient (?:address )?rejected|invalid (?:recipient|mailbox|address|user)|recipientnotfound|not listed in|mailbox not found|user not found|no mailbox|not a valid (?:mailbox|user|recipient)|(?:doesn't|does not) have an? (?:\S+ )?account|undeliverable address|bad destination/i;

const TOO_MANY_RECIPIENTS = /too many recipients/i;

/** Classifies the reply to RCPT TO. */
export function classifyRcpt(reply: SmtpReply): ReplyClass {
  const { code, enhanced, text } = reply;
  if (code === 250 || code === 251) return 'accepted';
  if (code === 252) return 'cannot_verify';
  if (code === 421) return 'try_next_mx';
  const klass = Math.floor(code / 100);
  if (klass !== 4 && klass !== 5) return 'invalid';
  const subject = enhanced?.slice(2) ?? '';
  if (WE_ARE_BLOCKED.test(text) && !NO_SUCH_USER.test(text)) return 'blocked';
  if (subject === '2.2' || FULL.test(text)) return 'mailbox_full';
  if (subject === '2.1' || DISABLED.test(text)) return klass === 5 ? 'disabled' : 'temporary';
  if (klass === 4) {
    if (subject === '5.3' || TOO_MANY_RECIPIENTS.test(text)) return 'temporary';
    if (GREYLISTED.test(text) || code === 450 || code === 451) return 'greylisted';
    if (code === 452) return 'mailbox_full';
    return subject.startsWith('7.') ? 'blocked' : 'temporary';
  }
  if (subject.startsWith('1.') || NO_SUCH_USER.test(text)) return 'rejected';
  if (subject.startsWith('7.')) return 'blocked';
  if (code === 552) return 'mailbox_full';
  return 'refused';
}

/**
 * Classifies a reply to anything but RCPT: the banner, EHLO/HELO, MAIL FROM, RSET. Success
 * codes are the caller's to check; this says why a failure ended the session.
 */
export function classifySession(reply: SmtpReply): ReplyClass {
  const { code, enhanced, text } = reply;
  if (code === 421) return 'try_next_mx';
  const klass = Math.floor(code / 100);
  if (klass === 4) {
    if (GREYLISTED.test(text) || code === 450 || code === 451) return 'greylisted';
    return enhanced?.startsWith('4.7.') || WE_ARE_BLOCKED.test(text) ? 'blocked' : 'temporary';
  }
  if (klass === 5) {
    return enhanced?.startsWith('5.7.') || WE_ARE_BLOCKED.test(text) ? 'blocked' : 'refused';
  }
  return 'invalid';
}
