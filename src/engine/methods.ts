import type { Checker } from '../checks/checker.js';
import { disposable } from '../checks/disposable.js';
import { domain } from '../checks/domain.js';
import { freeProvider } from '../checks/free-provider.js';
import { mx } from '../checks/mx.js';
import { noReply } from '../checks/no-reply.js';
import { role } from '../checks/role.js';
import { catchAll, smtp, type SmtpCheckOptions } from '../checks/smtp.js';
import { typo } from '../checks/typo.js';

export type MethodName = 'quick' | 'standard' | 'smtp';

export const METHOD_NAMES: readonly MethodName[] = ['quick', 'standard', 'smtp'];

/** A method is data: the checkers it runs, after syntax, in order, and what it costs. */
export interface Method {
  readonly name: MethodName;
  /** Credits one verification costs. */
  readonly cost: number;
  readonly checkers: readonly Checker[];
}

/** Which checkers a method runs; each is built once per engine with its data injected. */
export interface CheckerSet {
  readonly domain: Checker;
  readonly mx: Checker;
  readonly disposable: Checker;
  readonly role: Checker;
  readonly freeProvider: Checker;
  readonly noReply: Checker;
  /** Suggests the well-known mail domain a domain is one slip away from (standard and smtp). */
  readonly typo: Checker;
  /** What the smtp method adds: the probe, then the reading of its catch-all answer. */
  readonly smtp: readonly Checker[];
}

/**
 * The checkers of a default engine. `disposableAllow` names domains that are never
 * disposable whatever the list says (your own false positives).
 */
export function defaultCheckers(
  smtpOptions: SmtpCheckOptions = {},
  disposableAllow?: Iterable<string>,
): CheckerSet {
  return {
    smtp: [smtp(smtpOptions), catchAll()],
    domain: domain(),
    mx: mx(),
    disposable: disposable(disposableAllow === undefined ? {} : { allow: disposableAllow }),
    role: role(),
    freeProvider: freeProvider(),
    noReply: noReply(),
    typo: typo(),
  };
}

/**
 * The method table: quick (1 credit), standard (2), smtp (10). The offline checks of each method
 * run before its DNS lookup, so a failed TLD costs no query; standard's list checks add no I/O.
 * The typo check runs first: `gmail.con` fails the domain check and `gmial.com` may have no MX,
 * and those are the addresses that most need a suggestion. Quick keeps its five checks (syntax
 * and IDN, domain, disposable, mx).
 */
export function buildMethods(checkers: CheckerSet): Readonly<Record<MethodName, Method>> {
  const quick = [checkers.domain, checkers.disposable, checkers.mx];
  const standard = [
    checkers.typo,
    ...quick,
    checkers.role,
    checkers.freeProvider,
    checkers.noReply,
  ];
  return {
    quick: { name: 'quick', cost: 1, checkers: quick },
    standard: { name: 'standard', cost: 2, checkers: standard },
    smtp: { name: 'smtp', cost: 10, checkers: [...standard, ...checkers.smtp] },
  };
}
