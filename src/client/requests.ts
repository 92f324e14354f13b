/**
 * What the client's calls take (camelCase options) and how each becomes the wire's query
 * parameter or body field. The name tables below are the one place that spelling lives:
 * requests are built from them, and test/client/openapi-drift.test.ts compares them with the
 * parameters and request bodies of the OpenAPI document.
 */
import type { MethodName } from '../engine/methods.js';
import type {
  CompactResult,
  DetailedField,
  DetailedResult,
  FilterAction,
  FilterType,
  SelectedResult,
  ShapeBResult,
} from './types.js';

/** What every call takes. */
export interface CallOptions {
  /** Stops the call (and its retries); it then rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Overrides the client's timeoutMs for this call's attempts. */
  readonly timeoutMs?: number;
}

/** Shape A: the compact shape, the detailed one, or a selection of its fields. */
export interface ShapeAOptions extends CallOptions {
  readonly method?: MethodName;
  readonly detailed?: boolean;
  /** Fields of the detailed shape (`email` is always included). */
  readonly fields?: readonly DetailedField[];
  /** The same key with the same request within 24 hours answers the first answer, charged once. */
  readonly idempotencyKey?: string;
  readonly smtp?: never;
  readonly siteSource?: never;
}

/** Shape B, chosen by `smtp` or `siteSource`: `smtp: true` (the default) is the smtp method. */
export interface ShapeBOptions extends CallOptions {
  readonly smtp?: boolean;
  /** Echoed back in the answer. */
  readonly siteSource?: string;
  readonly idempotencyKey?: string;
  readonly method?: never;
  readonly detailed?: never;
  readonly fields?: never;
}

export type VerifyOptions = ShapeAOptions | ShapeBOptions;

/** Any answer of a single verify, for options whose shape is not known until run time. */
export type AnyVerifyResult =
  CompactResult | DetailedResult | Partial<DetailedResult> | ShapeBResult;

/**
 * The answer's type, read from the options as the server reads them: `smtp` or `siteSource`
 * give shape B; else `fields` a selection, `detailed: true` the detailed shape, and nothing
 * the compact one.
 */
export type VerifyAnswer<O> = O extends { smtp: boolean } | { siteSource: string }
  ? ShapeBResult
  : O extends { fields: readonly (infer F extends DetailedField)[] }
    ? SelectedResult<F>
    : O extends { detailed: true }
      ? DetailedResult
      : O extends { detailed?: false; fields?: undefined; smtp?: undefined; siteSource?: undefined }
        ? CompactResult
        : AnyVerifyResult;

type ShapeOption = Exclude<
  keyof ShapeAOptions | keyof ShapeBOptions,
  keyof CallOptions | 'idempotencyKey'
>;

/** The query parameter of each shape option of `GET /v1/verify` (beside `email`). */
export const VERIFY_PARAMETERS = {
  method: 'method',
  detailed: 'detailed',
  fields: 'fields',
  smtp: 'smtp',
  siteSource: 'site_source',
} as const satisfies Record<ShapeOption, string>;

/** The query of `GET /v1/verify` for `email` with these options. */
export function verifyQuery(email: string, options: VerifyOptions): Record<string, string> {
  const query: Record<string, string> = { email };
  for (const option of Object.keys(VERIFY_PARAMETERS) as ShapeOption[]) {
    const value = options[option];
    if (value === undefined) continue;
    query[VERIFY_PARAMETERS[option]] = Array.isArray(value) ? value.join(',') : String(value);
  }
  return query;
}

/** `submitBatch`'s options. */
export interface SubmitBatchOptions extends CallOptions {
  readonly method?: MethodName;
  /** Where the signed completion event is posted (https, public addresses). */
  readonly callbackUrl?: string;
  /**
   * Makes a resubmission (a retry after a lost answer) return the first job instead of making
   * a second one. Generated when not given, so the client's own retries are always safe.
   */
  readonly idempotencyKey?: string;
}

/** The body field of each part of a batch submission. */
export const BATCH_FIELDS = {
  emails: 'emails',
  method: 'method',
  callbackUrl: 'callback_url',
} as const satisfies Record<
  'emails' | Exclude<keyof SubmitBatchOptions, keyof CallOptions | 'idempotencyKey'>,
  string
>;

/** The JSON body of `POST /v1/verify`. */
export function batchBody(
  emails: readonly string[],
  options: SubmitBatchOptions,
): Record<string, unknown> {
  const body: Record<string, unknown> = { [BATCH_FIELDS.emails]: emails };
  if (options.method !== undefined) body[BATCH_FIELDS.method] = options.method;
  if (options.callbackUrl !== undefined) body[BATCH_FIELDS.callbackUrl] = options.callbackUrl;
  return body;
}

/** A filter to add. */
export interface NewFilter {
  /** An email, a domain (its subdomains match too), or an IP address or CIDR range. */
  readonly value: string;
  readonly type: FilterType;
  readonly action: FilterAction;
  readonly reason?: string | null;
}

/** The body field of each part of a new filter. */
export const FILTER_FIELDS = {
  value: 'value',
  type: 'filter_type',
  action: 'action',
  reason: 'reason',
} as const satisfies Record<keyof NewFilter, string>;

/** The JSON body of `POST /v1/filters`. */
export function filterBody(filter: NewFilter): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const key of Object.keys(FILTER_FIELDS) as (keyof NewFilter)[]) {
    if (filter[key] !== undefined) body[FILTER_FIELDS[key]] = filter[key];
  }
  return body;
}

/** Which page of filters to list. */
export interface FilterQuery {
  readonly type?: FilterType;
  /** From 1. */
  readonly page?: number;
  /** 1 to 100 (default 25). */
  readonly perPage?: number;
}

/** The query parameter of each part of a filter listing. */
export const FILTER_PARAMETERS = {
  type: 'filter_type',
  page: 'page',
  perPage: 'per_page',
} as const satisfies Record<keyof FilterQuery, string>;

/** The query of `GET /v1/filters`. */
export function filterQuery(query: FilterQuery): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(FILTER_PARAMETERS) as (keyof FilterQuery)[]) {
    const value = query[key];
    if (value !== undefined) out[FILTER_PARAMETERS[key]] = String(value);
  }
  return out;
}

/** The formats a batch's results download in. */
export type ResultsFormat = 'json' | 'csv' | 'ndjson';
