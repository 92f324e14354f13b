/**
 * The fields of the /v1 requests, each checked by one function that the service calls and the
 * HTTP layer reuses, so that a refusal names the same field with the same message whether it
 * came through HTTP or the library. The limits here are the ones the OpenAPI document states
 * (src/http/openapi.ts builds it from these constants).
 */
import { METHOD_NAMES, type MethodName } from '../engine/methods.js';
import type { FilterAction, FilterType } from '../ports/store.js';
import { invalidRequest } from './service-error.js';
import {
  CONTROL_CHARACTERS,
  MAX_EMAIL_INPUT_LENGTH,
  optionalText,
  requireInteger,
  requireOneOf,
  requireText,
} from './validate.js';

/** Most addresses one batch takes. */
export const MAX_BATCH_EMAILS = 50_000;
/** Longest idempotency key (`request_id`, the `Idempotency-Key` header). */
export const MAX_REQUEST_ID_LENGTH = 255;

export const FILTER_TYPES: readonly FilterType[] = ['email', 'domain', 'ip_address'];
export const FILTER_ACTIONS: readonly FilterAction[] = ['block', 'allow'];
/** Longest filter value: an address may be spelled in up to 1,024 characters. */
export const MAX_FILTER_VALUE_LENGTH = MAX_EMAIL_INPUT_LENGTH;
export const MAX_FILTER_REASON_LENGTH = 500;
export const FILTERS_PER_PAGE = 25;
export const MAX_FILTERS_PER_PAGE = 100;
/** Highest page number: far past any account's filters, and a safe offset for every store. */
export const MAX_FILTER_PAGE = 1_000_000;

/** Ids the service hands out: a prefix and base62 (`flt_…`, `batch_…`), at most this long. */
export const MAX_ID_LENGTH = 100;
/** The form of an id: letters, digits, `_` and `-` (the source of ID below, for documents). */
export const ID_PATTERN = `^[A-Za-z0-9_-]{1,${MAX_ID_LENGTH}}$`;
// Spelled out rather than `\w`: the document's readers are not all ECMAScript, and some take
// `\w` to mean any Unicode letter.
// eslint-disable-next-line regexp/use-ignore-case, regexp/prefer-w
const ID = new RegExp(ID_PATTERN);

export type ResultsFormat = 'json' | 'csv' | 'ndjson';
export const RESULTS_FORMATS: readonly ResultsFormat[] = ['json', 'csv', 'ndjson'];

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** C0, DEL and C1 (U+0080-U+009F, NEL among them): every Unicode control character. */
export const UNICODE_CONTROLS = `${CONTROL_CHARACTERS}-\\u009f`;
const UNICODE_CONTROL = new RegExp(`[${UNICODE_CONTROLS}]`);

/** `emails` of a batch: 1 to MAX_BATCH_EMAILS strings, each a possible address. */
export function requireEmails(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_BATCH_EMAILS) {
    throw invalidRequest('emails', `emails must be a list of 1 to ${MAX_BATCH_EMAILS} addresses`);
  }
  const emails: string[] = new Array<string>(value.length);
  for (let i = 0; i < value.length; i++) {
    const email: unknown = value[i];
    if (typeof email !== 'string' || email.length === 0 || email.length > MAX_EMAIL_INPUT_LENGTH) {
      throw invalidRequest(
        'emails',
        `emails[${i}] must be a string of 1 to ${MAX_EMAIL_INPUT_LENGTH} characters`,
      );
    }
    if (UNICODE_CONTROL.test(email)) {
      throw invalidRequest('emails', `emails[${i}] contains a control character`);
    }
    // JSON can spell a lone surrogate (`"\ud800@x.org"`), which is no text: SQLite stored it as
    // U+FFFD and verified that as deliverable, where the memory store said invalid_email.
    if (LONE_SURROGATE.test(email)) {
      throw invalidRequest('emails', `emails[${i}] is not well-formed Unicode (a lone surrogate)`);
    }
    emails[i] = email;
  }
  return emails;
}

/** `method`: one of METHOD_NAMES; absent is `standard`. */
export function methodOf(value: unknown): MethodName {
  return value === undefined ? 'standard' : requireOneOf(value, 'method', METHOD_NAMES);
}

/** `format` of a download: one of RESULTS_FORMATS; absent is `json`. */
export function resultsFormatOf(value: unknown): ResultsFormat {
  return value === undefined ? 'json' : requireOneOf(value, 'format', RESULTS_FORMATS);
}

export function filterTypeOf(value: unknown): FilterType {
  return requireOneOf(value, 'filter_type', FILTER_TYPES);
}

export function filterActionOf(value: unknown): FilterAction {
  return requireOneOf(value, 'action', FILTER_ACTIONS);
}

/** A filter's `value` as text; its form for the filter's type is checked where it is normalized. */
export function filterValueText(value: unknown): string {
  return requireText(value, 'value', MAX_FILTER_VALUE_LENGTH);
}

/** A filter's optional `reason`: absent or null is none. */
export function filterReasonOf(value: unknown): string | null {
  return optionalText(value, 'reason', MAX_FILTER_REASON_LENGTH);
}

/** `page` of a list, 1-based; absent is the first. */
export function pageOf(value: unknown): number {
  return value === undefined ? 1 : requireInteger(value, 'page', 1, MAX_FILTER_PAGE);
}

/** `per_page` of a list; absent is FILTERS_PER_PAGE. */
export function perPageOf(value: unknown): number {
  return value === undefined
    ? FILTERS_PER_PAGE
    : requireInteger(value, 'per_page', 1, MAX_FILTERS_PER_PAGE);
}

/**
 * The `id` of a job or filter: the form of the ids we issue, so that `..`, a slash, a NUL or a
 * 10 KB string never reaches a store.
 */
export function requireId(value: unknown): string {
  if (typeof value !== 'string' || !ID.test(value)) {
    throw invalidRequest('id', `id must be 1 to ${MAX_ID_LENGTH} letters, digits, _ or -`);
  }
  return value;
}

/**
 * An idempotency key: `request_id` in the library, the `Idempotency-Key` header over HTTP
 * (`field` names which the caller sent). A header may carry a tab; a key may not.
 */
export function requestIdOf(value: unknown, field = 'request_id'): string {
  return requireText(value, field, MAX_REQUEST_ID_LENGTH);
}
