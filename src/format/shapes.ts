import type { ParseErrorCode } from '../address/errors.js';
import type { RiskFactor } from '../checks/checker.js';
import type { State } from '../engine/score.js';
import type { Reason, Verdict } from '../engine/verdict.js';
import { optional } from '../optional.js';

/** Shape A, compact: what most callers need. */
export interface CompactResult {
  email: string;
  state: State;
  score: number;
  reason: Reason;
}

/** Shape A, detailed (README, "Result shapes"): snake_case, as on the wire. */
export interface DetailedResult extends CompactResult {
  domain: string | null;
  user: string | null;
  mx_record: string | null;
  smtp_provider: string | null;
  disposable: boolean | null;
  role: boolean | null;
  free: boolean | null;
  catch_all: boolean | null;
  mailbox_full: boolean | null;
  no_reply: boolean | null;
  /** The address probably meant (`ann@gmail.com` for `ann@gmial.com`), else null. */
  did_you_mean: string | null;
  duration: number;
}

export type DetailedField = keyof DetailedResult;

/** The compact shape's fields, in order: the first of the detailed shape's too. */
export const COMPACT_FIELDS = [
  'email',
  'state',
  'score',
  'reason',
] as const satisfies readonly (keyof CompactResult)[];

/** Every field `fields=` may name, in the detailed shape's order. */
export const DETAILED_FIELDS: readonly DetailedField[] = [
  ...COMPACT_FIELDS,
  'domain',
  'user',
  'mx_record',
  'smtp_provider',
  'disposable',
  'role',
  'free',
  'catch_all',
  'mailbox_full',
  'no_reply',
  'did_you_mean',
  'duration',
];

/**
 * One record of a batch's results: the detailed shape, every risk factor found, and why the
 * syntax check failed (null when it passed). The CLI writes the same record, so that a list
 * verified here or through a server reads alike.
 */
export interface ResultRecord extends DetailedResult {
  risk_factors: RiskFactor[];
  error: { code: ParseErrorCode; message: string } | null;
}

/** What a batch's record has beyond the detailed shape. */
export const RESULT_RECORD_FIELDS = ['risk_factors', 'error'] as const satisfies readonly Exclude<
  keyof ResultRecord,
  keyof DetailedResult
>[];

/** Shape B's status: only an undeliverable address is invalid. */
export const SHAPE_B_STATUSES = ['valid', 'invalid'] as const;

/** Shape B: a status and a deliverability, plus the flags and factors. */
export interface ShapeBResult {
  email: string;
  status: (typeof SHAPE_B_STATUSES)[number];
  score: number;
  deliverability: State;
  disposable: boolean | null;
  role: boolean | null;
  free: boolean | null;
  catch_all: boolean | null;
  risk_factors: RiskFactor[];
  did_you_mean: string | null;
  site_source?: string;
  duration: number;
}

/** Shape B's fields, in order; every one is always present but SHAPE_B_OPTIONAL's. */
export const SHAPE_B_FIELDS: readonly (keyof ShapeBResult)[] = [
  'email',
  'status',
  'score',
  'deliverability',
  'disposable',
  'role',
  'free',
  'catch_all',
  'risk_factors',
  'did_you_mean',
  'site_source',
  'duration',
];
/** Present only when the request gave one. */
export const SHAPE_B_OPTIONAL: readonly (keyof ShapeBResult)[] = ['site_source'];

/** A `fields` selection named a field that does not exist. */
export class UnknownFieldError extends Error {
  readonly code = 'invalid_request';
  readonly field: string;
  readonly allowed: readonly string[];

  constructor(field: string) {
    super(
      `Unknown field ${JSON.stringify(field)} in fields: allowed are ${DETAILED_FIELDS.join(', ')}`,
    );
    this.name = 'UnknownFieldError';
    this.field = field;
    this.allowed = DETAILED_FIELDS;
  }
}

export function toCompact(verdict: Verdict): CompactResult {
  return {
    email: verdict.email,
    state: verdict.state,
    score: verdict.score,
    reason: verdict.reason,
  };
}

// Durations on the wire in milliseconds' precision: more digits only add noise.
function roundedDuration(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}

export function toDetailed(verdict: Verdict): DetailedResult {
  return {
    ...toCompact(verdict),
    domain: verdict.domain,
    user: verdict.user,
    mx_record: verdict.mxRecord,
    smtp_provider: verdict.smtpProvider,
    disposable: verdict.disposable,
    role: verdict.role,
    free: verdict.free,
    catch_all: verdict.catchAll,
    mailbox_full: verdict.mailboxFull,
    no_reply: verdict.noReply,
    did_you_mean: verdict.didYouMean,
    duration: roundedDuration(verdict.duration),
  };
}

export function toResultRecord(verdict: Verdict): ResultRecord {
  return {
    ...toDetailed(verdict),
    risk_factors: [...verdict.riskFactors],
    error:
      verdict.error === null ? null : { code: verdict.error.code, message: verdict.error.message },
  };
}

/**
 * Parses a `fields=a,b,c` selection. `email` is always included. An unknown name is an
 * `UnknownFieldError` listing the allowed ones, never silently dropped.
 */
export function parseFields(selection: string | readonly string[]): DetailedField[] {
  const names = typeof selection === 'string' ? selection.split(',') : selection;
  const chosen = new Set<DetailedField>(['email']);
  for (const raw of names) {
    const name = raw.trim();
    if (name === '') continue;
    if (!(DETAILED_FIELDS as readonly string[]).includes(name)) throw new UnknownFieldError(name);
    chosen.add(name as DetailedField);
  }
  return DETAILED_FIELDS.filter((field) => chosen.has(field));
}

/** The detailed shape cut down to the selected fields, in the shape's own order. */
export function selectFields(
  verdict: Verdict,
  fields: readonly DetailedField[],
): Partial<DetailedResult> {
  const detailed = toDetailed(verdict);
  const out: Partial<Record<DetailedField, unknown>> = {};
  for (const field of fields) out[field] = detailed[field];
  return out as Partial<DetailedResult>;
}

export function toShapeB(verdict: Verdict, siteSource?: string): ShapeBResult {
  return {
    email: verdict.email,
    status: verdict.state === 'undeliverable' ? 'invalid' : 'valid',
    score: verdict.score,
    deliverability: verdict.state,
    disposable: verdict.disposable,
    role: verdict.role,
    free: verdict.free,
    catch_all: verdict.catchAll,
    risk_factors: [...verdict.riskFactors],
    did_you_mean: verdict.didYouMean,
    ...optional('site_source', siteSource),
    duration: roundedDuration(verdict.duration),
  };
}
