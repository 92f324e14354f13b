import type { ProbeAnswer, ProbeClass, ProbeRecipient } from '../ports/smtp.js';
import {
  fail,
  pass,
  risky,
  skipped,
  unknown,
  type AddressFacts,
  type Checker,
  type Finding,
} from './checker.js';
import { delay } from '../delay.js';

/** The finding for each thing a probe can say about a mailbox (README: "SMTP outcomes"). */
export const SMTP_FINDINGS: Readonly<Record<ProbeClass, Finding>> = {
  accepted: pass('smtp', 'accepted'),
  rejected: fail('smtp', 'mailbox_not_found', 'smtp_rejected'),
  disabled: fail('smtp', 'mailbox_disabled', 'smtp_rejected'),
  smtputf8_unsupported: fail('smtp', 'smtputf8_unsupported', 'smtp_rejected'),
  mailbox_full: risky('smtp', 'mailbox_full', 'mailbox_full'),
  greylisted: unknown('smtp', 'greylisted', 'greylisted'),
  blocked: unknown('smtp', 'sender_blocked'),
  sender_refused: unknown('smtp', 'sender_refused'),
  too_many_recipients: unknown('smtp', 'temporary_failure'),
  cannot_verify: unknown('smtp', 'cannot_verify'),
  temporary: unknown('smtp', 'temporary_failure'),
  try_next_mx: unknown('smtp', 'temporary_failure'),
  refused: unknown('smtp', 'refused'),
  no_connect: unknown('smtp', 'no_connect'),
  timeout: unknown('smtp', 'smtp_timeout'),
  invalid: unknown('smtp', 'invalid_smtp'),
};

const OFFLINE = skipped('smtp', 'offline');
const NO_HOSTS = skipped('smtp', 'no_mx_hosts');

export interface SmtpCheckOptions {
  /** A random local part for the catch-all probe; 20 characters from the Random port. */
  readonly randomLocalPart?: () => string;
  /**
   * How long to wait before asking once more when a server greylists, for verifications that
   * ask for it (`retryGreylisted`). Default 6 minutes: postgrey's delay is 5.
   */
  readonly greylistRetryMs?: number;
}

export const GREYLIST_RETRY_MS = 360_000;

/**
 * Asks the domain's mail hosts whether they take mail for the address (RCPT TO, never DATA),
 * and with the same session whether they take mail for a random address (catch-all).
 */
export function smtp(options: SmtpCheckOptions = {}): Checker {
  const randomLocalPart = options.randomLocalPart ?? randomLocal;
  return {
    name: 'smtp',
    run(facts, ports, signal) {
      const prober = ports.smtp;
      if (prober === undefined || prober.offline === true || ports.dns.offline === true) {
        return OFFLINE;
      }
      const hosts = hostsByPriority(facts);
      if (hosts.length === 0) return NO_HOSTS;
      const { parsed } = facts;
      const domain = parsed.asciiDomain;
      const recipient: ProbeRecipient = {
        // The canonical parse only: A-label domain, NFC local part (UTF-8 only if it must be).
        address: parsed.smtpUtf8 ? `${parsed.local}@${domain}` : (parsed.asciiAddress as string),
        smtpUtf8: parsed.smtpUtf8,
      };
      const catchAllProbe = { address: `${randomLocalPart()}@${domain}`, smtpUtf8: false };
      const ask = (withCatchAll: boolean) =>
        prober.probe(
          {
            domain,
            hosts,
            recipients: [recipient],
            ...(withCatchAll ? { catchAllProbe } : {}),
          },
          signal,
        );
      return ask(true).then(async (report) => {
        let answer = report.recipients[0] as ProbeAnswer;
        let catchAll = report.catchAll;
        if (answer.class === 'greylisted' && facts.retryGreylisted === true) {
          await delay(options.greylistRetryMs ?? GREYLIST_RETRY_MS, signal);
          // The greylister put off the random address too (postgrey greylists each
          // recipient): ask it again with the mailbox, or a catch-all domain behind the
          // greylister passes as deliverable. Same address, so its greylisting has passed.
          const again = await ask(!isConclusive(catchAll));
          answer = again.recipients[0] as ProbeAnswer;
          catchAll = isConclusive(catchAll) ? catchAll : (again.catchAll ?? catchAll);
        }
        facts.smtp = { answer, catchAll };
        return SMTP_FINDINGS[answer.class];
      });
    },
  };
}

/** Whether a catch-all probe's answer says anything: the random address taken or refused. */
function isConclusive(probe: ProbeAnswer | null): boolean {
  return probe?.class === 'accepted' || probe?.class === 'rejected';
}

const CATCH_ALL = risky('catch_all', 'accepts_any_address', 'catch_all');
const NOT_CATCH_ALL = pass('catch_all');
const NOT_PROBED = skipped('catch_all', 'not_probed');
const INCONCLUSIVE = skipped('catch_all', 'inconclusive');

/**
 * Reads the catch-all probe: a domain that accepts a random 20-character address accepts
 * anything, so its "accepted" proves nothing about the mailbox (low_deliverability).
 */
export function catchAll(): Checker {
  return {
    name: 'catch_all',
    run({ smtp: facts }) {
      const probe = facts?.catchAll;
      if (probe === undefined || probe === null) return NOT_PROBED;
      if (probe.class === 'accepted') return CATCH_ALL;
      if (probe.class === 'rejected') return NOT_CATCH_ALL;
      return INCONCLUSIVE;
    },
  };
}

/** MX hosts in priority order, equal priorities shuffled to spread the load (RFC 5321 5.1). */
function hostsByPriority(facts: AddressFacts): string[] {
  const hosts = facts.mx?.hosts ?? [];
  const order = hosts.map((host) => ({ host, tiebreak: Math.random() }));
  order.sort((a, b) => a.host.priority - b.host.priority || a.tiebreak - b.tiebreak);
  return order.map(({ host }) => host.exchange);
}

const LOCAL_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** 20 random letters and digits: no real mailbox is named like that. */
function randomLocal(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(20));
  let local = '';
  for (const byte of bytes) local += LOCAL_ALPHABET[byte % LOCAL_ALPHABET.length];
  return local;
}
