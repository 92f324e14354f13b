/**
 * What a reply says about a mailbox (for RCPT) or about the session (for the banner, EHLO,
 * MAIL FROM, RSET), as smtp/classify.ts decides it, the one place that reads codes and texts:
 * **a reply judges the mailbox only when it is a reply to RCPT and is about the recipient.**
 *
 * - accepted: 250/251, the mailbox takes mail.
 * - rejected: the mailbox or its domain does not exist (X.1.1, X.1.2, X.1.6, X.1.10, "user
 *   unknown" and its many spellings, a 5xx X.7.x whose text says only that, a provider's
 *   documented marker such as Exchange Online's AS(201806281)).
 * - disabled: the mailbox exists but is closed (5xx X.2.1, "disabled", "inactive").
 * - mailbox_full: over quota (X.2.2, quota texts).
 * - greylisted: come back later (greylisting texts, 4.7.x "try again later").
 * - cannot_verify: 252, the server will try but will not say.
 * - blocked: the server refuses US (X.7.x, RBLs, reputation, relay, a rate limit on our client,
 *   our IP or HELO): says nothing about the mailbox, so it is unknown, never rejected, and
 *   never asked again.
 * - sender_refused: our envelope sender is refused (X.1.7, X.1.8, "Sender address rejected",
 *   any 5xx to MAIL FROM that is not policy): unknown for every recipient of the session.
 * - too_many_recipients: not an answer (X.5.3, 452, 552 to RCPT): ask again in a new
 *   transaction (RFC 5321 4.5.3.1.10).
 * - try_next_mx: 421, this host is going away; another MX may answer (RFC 5321 3.8).
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

/** One address to ask about, in its canonical form (the parser's ASCII or Unicode form). */
export interface ProbeRecipient {
  readonly address: string;
  /** The address needs SMTPUTF8 (RFC 6531): sent only to a server that offers it. */
  readonly smtpUtf8: boolean;
}

/**
 * A per-host connection limit shared with other processes (workers on one Redis, say): a
 * session holds one of its slots as well as one of its own process's.
 */
export interface SharedHostSlots {
  /** Waits for a slot to `host`; resolves with the function that gives it back (once). */
  acquire(host: string, signal?: AbortSignal): Promise<() => void>;
}

/** One probe: many recipients at one domain, answered over as few sessions as possible. */
export interface ProbeRequest {
  /** The ASCII domain the recipients share. */
  readonly domain: string;
  /** Its mail hosts, most preferred first (MX names, or the literal of a domain literal). */
  readonly hosts: readonly string[];
  readonly recipients: readonly ProbeRecipient[];
  /** A surely non-existent address at the domain, asked first; absent when already known. */
  readonly catchAllProbe?: ProbeRecipient;
}

/**
 * What became of one recipient. The reply classes of smtp/classify.ts, plus the outcomes
 * that have no reply: `smtputf8_unsupported` (the server cannot take a UTF-8 address),
 * `no_connect` (no host could be reached, or every host was a private address we refuse),
 * `timeout` (a phase timeout or the session deadline).
 */
export type ProbeClass = ReplyClass | 'smtputf8_unsupported' | 'no_connect' | 'timeout';

export interface ProbeAnswer {
  readonly class: ProbeClass;
  /** The reply behind the answer, when there was one: code, enhanced code, text. */
  readonly reply: {
    readonly code: number;
    readonly enhanced: string | null;
    readonly text: string;
  } | null;
  /** The MX host that answered, or the last one tried. */
  readonly host: string | null;
}

export interface ProbeReport {
  /** One answer per recipient, in the request's order. */
  readonly recipients: readonly ProbeAnswer[];
  /** The catch-all probe's answer, when one was asked. */
  readonly catchAll: ProbeAnswer | null;
  /** TCP connections this probe opened. */
  readonly connections: number;
}

/**
 * The SMTP port. Never rejects for anything a server does (refusals, timeouts, garbage are
 * answers); rejects only when `signal` aborts.
 */
export interface SmtpProber {
  /** True for a prober that never connects (offline engines): the smtp check is skipped. */
  readonly offline?: boolean;
  probe(request: ProbeRequest, signal?: AbortSignal): Promise<ProbeReport>;
}
