import type { ProbeAnswer, ProbeClass, ProbeRequest, SmtpProber } from '../ports/smtp.js';

export interface MemorySmtpOptions {
  /** Outcome per address (lower-cased); unlisted addresses are `rejected`. */
  readonly mailboxes?: Readonly<Record<string, ProbeClass>>;
  /** Domains that accept every address, the catch-all probe included. */
  readonly catchAllDomains?: readonly string[];
  /** Outcome for every address of a domain (a blocked or unreachable domain, say). */
  readonly domains?: Readonly<Record<string, ProbeClass>>;
}

export interface MemorySmtp extends SmtpProber {
  /** Every probe request received, in order. */
  readonly requests: readonly ProbeRequest[];
}

/**
 * An SmtpProber for tests: answers from a table, no socket.
 *
 * @example
 * const smtp = createMemorySmtp({ mailboxes: { 'ann@example.org': 'accepted' } });
 * const engine = createEngine({ dns: createMemoryDns({ 'example.org': ['mx.example.org'] }), smtp });
 */
export function createMemorySmtp(options: MemorySmtpOptions = {}): MemorySmtp {
  const requests: ProbeRequest[] = [];
  const answer = (address: string): ProbeAnswer => {
    const email = address.toLowerCase();
    const domain = email.slice(email.lastIndexOf('@') + 1);
    const klass =
      options.domains?.[domain] ??
      options.mailboxes?.[email] ??
      (options.catchAllDomains?.includes(domain) ? 'accepted' : 'rejected');
    return { class: klass, reply: null, host: null };
  };
  return {
    requests,
    probe(request, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      requests.push(request);
      return Promise.resolve({
        recipients: request.recipients.map((recipient) => answer(recipient.address)),
        catchAll:
          request.catchAllProbe === undefined ? null : answer(request.catchAllProbe.address),
        connections: 0,
      });
    },
  };
}
