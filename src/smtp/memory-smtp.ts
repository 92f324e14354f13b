import { SMTP_FINDINGS } from '../checks/smtp.js';
import type { ProbeAnswer, ProbeClass, ProbeRequest, SmtpProber } from '../ports/smtp.js';

export interface MemorySmtpOptions {
  /**
   * Outcome per address (matched without regard to case); unlisted addresses are `rejected`.
   * The outcomes are the keys of SMTP_FINDINGS, the README's table of SMTP outcomes.
   */
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
 * An SmtpProber for tests: answers from a table, no socket. An outcome it could not answer
 * (a finding such as `mailbox_not_found` given for the outcome `rejected`, a typo) is a
 * TypeError here, naming the allowed outcomes, rather than a failure at the first verify.
 *
 * @example
 * const smtp = createMemorySmtp({ mailboxes: { 'ann@example.org': 'accepted' } });
 * const engine = createEngine({ dns: createMemoryDns({ 'example.org': ['mx.example.org'] }), smtp });
 */
export function createMemorySmtp(options: MemorySmtpOptions = {}): MemorySmtp {
  const mailboxes = outcomeTable(options.mailboxes, 'mailboxes');
  const domains = outcomeTable(options.domains, 'domains');
  const catchAllDomains = new Set(
    (options.catchAllDomains ?? []).map((domain) => domain.toLowerCase()),
  );
  const requests: ProbeRequest[] = [];
  const answer = (address: string): ProbeAnswer => {
    const email = address.toLowerCase();
    const domain = email.slice(email.lastIndexOf('@') + 1);
    const klass =
      domains.get(domain) ??
      mailboxes.get(email) ??
      (catchAllDomains.has(domain) ? 'accepted' : 'rejected');
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

/** A table of outcomes by lower-cased name, each checked to be one the engine answers. */
function outcomeTable(
  table: Readonly<Record<string, unknown>> | undefined,
  option: string,
): ReadonlyMap<string, ProbeClass> {
  const outcomes = new Map<string, ProbeClass>();
  for (const [name, outcome] of Object.entries(table ?? {})) {
    if (typeof outcome !== 'string' || !Object.hasOwn(SMTP_FINDINGS, outcome)) {
      throw new TypeError(
        `createMemorySmtp: ${option}[${JSON.stringify(name)}] is ${JSON.stringify(outcome)}, ` +
          `not an outcome${findingOf(outcome)}; the outcomes are ${Object.keys(SMTP_FINDINGS).join(', ')}.`,
      );
    }
    outcomes.set(name.toLowerCase(), outcome as ProbeClass);
  }
  return outcomes;
}

/** ` (it is the finding of "rejected")` when `value` is a finding code rather than an outcome. */
function findingOf(value: unknown): string {
  const outcomes = Object.entries(SMTP_FINDINGS)
    .filter(([, finding]) => finding.code === value)
    .map(([outcome]) => JSON.stringify(outcome));
  return outcomes.length === 0 ? '' : ` (it is the finding of ${outcomes.join(' or ')})`;
}
