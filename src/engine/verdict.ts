import type { ParseErrorCode } from '../address/errors.js';
import type { CheckName, Finding, RiskFactor } from '../checks/checker.js';
import type { MethodName } from './methods.js';
import type { State } from './score.js';

/** Every reason code a verdict may give: a closed set, which users switch on. */
export const REASONS = [
  'accepted_email',
  'rejected_email',
  'invalid_email',
  'invalid_domain',
  'invalid_smtp',
  'low_quality',
  'low_deliverability',
  'no_connect',
  'timeout',
  'unavailable_smtp',
  'unexpected_error',
  'blocked_by_filter',
  'allowed_by_filter',
] as const;

/** The one reason code of a verdict. */
export type Reason = (typeof REASONS)[number];

/** Reasons that mean "we could not find out": refunded, never held against the address. */
export const UNKNOWN_REASONS: ReadonlySet<Reason> = new Set([
  'invalid_smtp',
  'no_connect',
  'timeout',
  'unavailable_smtp',
  'unexpected_error',
]);

/** The answer for one address, with the facts behind it. */
export interface Verdict {
  /** The normalized address when it parsed, else the input as given. */
  readonly email: string;
  readonly input: string;
  readonly state: State;
  readonly reason: Reason;
  /** 0-100, inside the state's band: 80-100 deliverable, 1-79 risky, 0 undeliverable. */
  readonly score: number;
  readonly riskFactors: readonly RiskFactor[];
  readonly method: MethodName;
  /** Local part, or null when the address did not parse. */
  readonly user: string | null;
  /** Unicode domain, or null when the address did not parse. */
  readonly domain: string | null;
  /** A-label domain, or null when the address did not parse. */
  readonly asciiDomain: string | null;
  /** The preferred mail host, or null when none was found (or DNS was offline). */
  readonly mxRecord: string | null;
  /** All mail hosts by priority. */
  readonly mxRecords: readonly string[];
  /** Short id of the mail provider behind the MX host (google, microsoft, ...), or null. */
  readonly smtpProvider: string | null;
  readonly disposable: boolean | null;
  readonly role: boolean | null;
  readonly free: boolean | null;
  readonly noReply: boolean | null;
  readonly catchAll: boolean | null;
  readonly mailboxFull: boolean | null;
  /**
   * The address probably meant when the domain looks like a slip of a well-known mail domain
   * (`ann@gmail.com` for `ann@gmial.com`, with the `possible_typo` factor), else null.
   */
  readonly didYouMean: string | null;
  /** Delivery needs SMTPUTF8 (a non-ASCII local part). */
  readonly smtpUtf8: boolean;
  /** One of the three fixed test addresses: no check ran, no credit is due. */
  readonly testAddress: boolean;
  /** Why the syntax check failed, when it did. */
  readonly error: { readonly code: ParseErrorCode; readonly message: string } | null;
  /** Every check that ran, in order, with what it found. */
  readonly checks: readonly Finding[];
  /** Seconds the verification took. */
  readonly duration: number;
}

/** The state and reason the findings support, most decisive first, in one pass. */
export function decide(findings: readonly Finding[]): { state: State; reason: Reason } {
  let failed: Finding | undefined;
  let unknown: Finding | undefined;
  let lowQuality = false;
  let lowDeliverability = false;
  for (const finding of findings) {
    if (finding.status === 'fail') {
      failed ??= finding;
    } else if (finding.status === 'unknown') {
      unknown ??= finding;
    }
    const { factor } = finding;
    if (factor === 'disposable' || factor === 'confusable') lowQuality = true;
    else if (factor === 'catch_all' || factor === 'mailbox_full') lowDeliverability = true;
  }
  if (failed !== undefined) return { state: 'undeliverable', reason: failReason(failed.check) };
  if (lowQuality) return { state: 'risky', reason: 'low_quality' };
  if (unknown !== undefined) return { state: 'risky', reason: unknownReason(unknown) };
  if (lowDeliverability) return { state: 'risky', reason: 'low_deliverability' };
  return { state: 'deliverable', reason: 'accepted_email' };
}

function failReason(check: CheckName): Reason {
  switch (check) {
    case 'syntax':
      return 'invalid_email';
    case 'domain':
    case 'mx':
      return 'invalid_domain';
    default:
      return 'rejected_email';
  }
}

/**
 * A DNS or SMTP timeout is a timeout; a name server that fails or refuses, or a mail host we
 * cannot reach, is no_connect; a server talking nonsense is invalid_smtp; any other SMTP
 * answer that says nothing about the mailbox (greylisting, a block of our IP, 4xx, 252) is
 * unavailable_smtp.
 */
function unknownReason(finding: Finding): Reason {
  if (finding.code.endsWith('timeout')) return 'timeout';
  if (finding.check === 'mx') return 'no_connect';
  if (finding.check === 'smtp') {
    if (finding.code === 'no_connect') return 'no_connect';
    if (finding.code === 'invalid_smtp') return 'invalid_smtp';
    return 'unavailable_smtp';
  }
  return 'unexpected_error';
}
