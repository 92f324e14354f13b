import type { ReplyClass } from '../smtp/classify.js';
import type { ProbeRecipient } from '../smtp/session.js';

export type { ProbeRecipient };

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
