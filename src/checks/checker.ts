import type { ParsedAddress, ParseResult } from '../address/parse.js';
import type { Dns, MxHost } from '../ports/dns.js';
import type { ProbeAnswer, SmtpProber } from '../ports/smtp.js';

/** Every check the engine knows, by name. */
export type CheckName =
  | 'syntax'
  | 'domain'
  | 'mx'
  | 'disposable'
  | 'role'
  | 'free_provider'
  | 'no_reply'
  | 'typo'
  | 'smtp'
  | 'catch_all';

/**
 * pass: nothing found. fail: the address cannot receive mail. risky: a risk factor was found.
 * unknown: the check could not complete (never evidence against the address). skipped: the
 * check did not apply (offline DNS, an earlier failure).
 */
export type FindingStatus = 'pass' | 'fail' | 'risky' | 'unknown' | 'skipped';

/** Risk factors a verdict may carry. A closed set: users filter on them. */
export const RISK_FACTORS = [
  'disposable',
  'role',
  'free',
  'no_reply',
  'confusable',
  'no_mx',
  'nxdomain',
  'null_mx',
  'catch_all',
  'mailbox_full',
  'smtp_rejected',
  'greylisted',
  'possible_typo',
  'dns_unavailable',
] as const;
export type RiskFactor = (typeof RISK_FACTORS)[number];

/** What one checker found: a status, a snake_case code and the factor it raises, if any. */
export interface Finding {
  readonly check: CheckName;
  readonly status: FindingStatus;
  readonly code: string;
  readonly factor?: RiskFactor;
}

/** Facts about the mail route, gathered by the mx check. */
export interface MxFacts {
  readonly hosts: readonly MxHost[];
  readonly implicit: boolean;
}

/** What the checks of one verification share: the canonical parse and what was learned. */
export interface Facts {
  readonly input: string;
  readonly parsed: ParseResult;
  mx?: MxFacts;
  smtp?: SmtpFacts;
  /** The address the typo check thinks was meant (`ann@gmail.com` for `ann@gmial.com`). */
  didYouMean?: string;
  /** Wait and ask again when an SMTP server greylists (batches; off for single verifies). */
  readonly retryGreylisted?: boolean;
}

/** What the SMTP probe said about the mailbox and, when asked, about the domain. */
export interface SmtpFacts {
  readonly answer: ProbeAnswer;
  /** The catch-all probe's answer: from this session or from the per-domain cache. */
  readonly catchAll: ProbeAnswer | null;
}

/** Facts once syntax has passed: the only kind that later checks see. */
export interface AddressFacts extends Facts {
  readonly parsed: ParsedAddress;
}

/** The ports a checker may use. Only I/O checkers touch them. */
export interface CheckPorts {
  readonly dns: Dns;
  readonly smtp?: SmtpProber;
}

export type CheckResult = Finding | Promise<Finding>;

/**
 * A checker: a name and a run function. It never throws for anything about the address:
 * expected failures are findings. It returns a promise only when it does I/O, so an offline
 * pipeline stays synchronous.
 */
export interface Checker {
  readonly name: CheckName;
  run(facts: AddressFacts, ports: CheckPorts, signal?: AbortSignal): CheckResult;
}

// Findings are immutable: checkers build the few they can return once, at construction,
// and hand out the same objects (bench/ measured allocation at a fifth of an offline verify).
function finding(
  check: CheckName,
  status: FindingStatus,
  code: string,
  factor?: RiskFactor,
): Finding {
  return Object.freeze(
    factor === undefined ? { check, status, code } : { check, status, code, factor },
  );
}

export function pass(check: CheckName, code = 'ok'): Finding {
  return finding(check, 'pass', code);
}

export function fail(check: CheckName, code: string, factor?: RiskFactor): Finding {
  return finding(check, 'fail', code, factor);
}

export function risky(check: CheckName, code: string, factor: RiskFactor): Finding {
  return finding(check, 'risky', code, factor);
}

export function unknown(check: CheckName, code: string, factor?: RiskFactor): Finding {
  return finding(check, 'unknown', code, factor);
}

export function skipped(check: CheckName, code: string): Finding {
  return finding(check, 'skipped', code);
}
