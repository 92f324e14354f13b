import type { MethodName } from '../engine/methods.js';
import type { LedgerRequest } from '../ports/store.js';
import { StoreError, type StoreErrorCode } from '../store/rules/store-error.js';
import { MAX_LEDGER_AMOUNT } from '../store/rules/ledger.js';
import { invalidRequest, ServiceError } from './service-error.js';

/**
 * C0 controls and DEL: never part of an id, a name, a note or an address (RFC 5321 4.1.2 has
 * no control character even in a quoted string), and a CR/LF or NUL let through would split a
 * log line, a CSV row or a header, or be cut short by a C string in a store.
 */
export const CONTROL_CHARACTERS = '\\u0000-\\u001f\\u007f';
/** One of CONTROL_CHARACTERS (the OpenAPI document's patterns are built from the same text). */
export const CONTROL_CHARACTER = new RegExp(`[${CONTROL_CHARACTERS}]`);
// eslint-disable-next-line no-control-regex
const HEADER_BREAKING = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/** Longest header value `authenticate` reads (a key is 38 characters; Origin a URL). */
export const MAX_HEADER_LENGTH = 8192;

/**
 * A string field of 1 to `maxLength` characters without control characters, else
 * `invalid_request` naming it.
 */
export function requireText(value: unknown, field: string, maxLength = 200): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > maxLength ||
    CONTROL_CHARACTER.test(value)
  ) {
    throw invalidRequest(
      field,
      `${field} must be a string of 1 to ${maxLength} characters without control characters`,
    );
  }
  return value;
}

/**
 * An optional header value as a host hands it over: undefined or null (absent), or a string of
 * at most MAX_HEADER_LENGTH characters that could have come in a header (no CR, LF or NUL).
 */
export function optionalHeader(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (
    typeof value !== 'string' ||
    value.length > MAX_HEADER_LENGTH ||
    HEADER_BREAKING.test(value)
  ) {
    throw invalidRequest(
      field,
      `${field} must be a string of at most ${MAX_HEADER_LENGTH} characters, as in a header`,
    );
  }
  return value;
}

/**
 * An object (not null, not an array), else `invalid_request` naming the parameter. What is
 * returned is a snapshot of its own enumerable fields, read once, as JSON would carry them:
 * a getter cannot answer one value when checked and another when used, an inherited field
 * counts for nothing, and a Proxy that throws (or was revoked) is a refusal naming the
 * parameter rather than its own TypeError escaping.
 */
export function requireObject(value: unknown, field: string): Readonly<Record<string, unknown>> {
  if (typeof value !== 'object' || value === null) {
    throw invalidRequest(field, `${field} must be an object`);
  }
  let fields: Record<string, unknown>;
  try {
    if (Array.isArray(value)) throw invalidRequest(field, `${field} must be an object`);
    // Spread defines own data properties, so a `__proto__` key stays a key; and it keeps the
    // copy a fast object: a null-prototype copy filled name by name cost 260 ns against 26
    // (node, six fields), on every authenticate and verify.
    fields = { ...(value as Record<string, unknown>) };
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    throw invalidRequest(field, `${field} must be an object whose fields can be read`);
  }
  return fields;
}

/** An optional options object: undefined means none; anything else must be an object. */
export function optionalObject(value: unknown, field: string): Readonly<Record<string, unknown>> {
  return value === undefined ? {} : requireObject(value, field);
}

/** One of `allowed` (own values only: `constructor` or `__proto__` never pass), else refused. */
export function requireOneOf<T extends string>(
  value: unknown,
  field: string,
  allowed: readonly T[],
): T {
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw invalidRequest(field, `${field} must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

/**
 * The account id of a caller (a Caller from `authenticate`, or `{ accountId }` from an
 * admin), checked before anything reads `caller.accountId` off a null or a number.
 */
export function requireAccountRef(caller: unknown): string {
  return requireText(requireObject(caller, 'caller').accountId, 'account_id');
}

/** An optional string field: undefined, null or within limits. */
export function optionalText(value: unknown, field: string, maxLength = 200): string | null {
  return value === undefined || value === null ? null : requireText(value, field, maxLength);
}

/** A boolean, else `invalid_request` naming the field. */
export function requireBoolean(value: unknown, field: string): boolean {
  if (typeof value !== 'boolean') throw invalidRequest(field, `${field} must be true or false`);
  return value;
}

/** A whole number within [min, max], else `invalid_request` naming the field. */
export function requireInteger(value: unknown, field: string, min: number, max: number): number {
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) {
    throw invalidRequest(field, `${field} must be a whole number from ${min} to ${max}`);
  }
  return value as number;
}

/** An array of strings, each normalized by `normalize`, or `invalid_request` naming the bad one. */
export function requireList(
  value: unknown,
  field: string,
  normalize: (item: string) => string | undefined,
  what: string,
  maxItems = 100,
): string[] {
  if (value === undefined) return [];
  // Read once, item by item, as requireObject reads fields: a Proxy's traps cannot throw past
  // here, nor claim a length of a billion to be copied.
  const items: unknown[] = [];
  try {
    const length: unknown = Array.isArray(value) ? value.length : undefined;
    if (typeof length !== 'number' || length > maxItems) throw new RangeError(field);
    for (let index = 0; index < length; index++) items.push((value as unknown[])[index]);
  } catch {
    throw invalidRequest(field, `${field} must be an array of at most ${maxItems} ${what}s`);
  }
  const normalized = items.map((item: unknown, index) => {
    // No item is longer than a domain name (253) or an IPv6 range; longer is not parsed at all.
    const result =
      typeof item === 'string' && item.length <= 255 && !CONTROL_CHARACTER.test(item)
        ? normalize(item)
        : undefined;
    if (result === undefined) {
      // Quoted only when a short string: a BigInt or a symbol cannot be JSON-stringified.
      const shown =
        typeof item === 'string' && item.length <= 255 ? JSON.stringify(item) : `a ${typeof item}`;
      throw invalidRequest(field, `${field}[${index}] is not a valid ${what}: ${shown}`);
    }
    return result;
  });
  return [...new Set(normalized)];
}

/**
 * Runs a service operation, answering the store's faults as ServiceErrors: a locked, full or
 * damaged store is a clear internal_error (the store wrote nothing), never a wrong answer.
 */
export async function answering<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw serviceErrorOf(error);
  }
}

function serviceErrorOf(error: unknown): unknown {
  if (!(error instanceof StoreError)) return error;
  switch (error.code) {
    case 'invalid':
      return new ServiceError('invalid_request', error.message, {}, { cause: error });
    case 'not_found':
      return new ServiceError('not_found', error.message, {}, { cause: error });
    default:
      // The store's own words (a driver's message, a library's option names) stay with the
      // cause, for the log: a client reads only what kind of fault it was.
      return new ServiceError('internal_error', STORE_FAULTS[error.code], {}, { cause: error });
  }
}

/** What a client is told of each fault of the store underneath. */
const STORE_FAULTS: Readonly<Record<Exclude<StoreErrorCode, 'invalid' | 'not_found'>, string>> = {
  busy: 'The data store is busy; nothing was written, and the request may be retried.',
  full: 'The data store is full; nothing was written.',
  corrupt: 'The data store is damaged; nothing was written.',
  readonly: 'The data store is read-only; nothing was written.',
  io: 'The data store could not be reached; nothing was written, and the request may be retried.',
  closed: 'The data store is closed; nothing was written.',
  timeout:
    'The data store did not answer in time; the change may still be applied: repeat the ' +
    'request with the same Idempotency-Key to learn its outcome.',
  constraint: 'The data store refused the change; nothing was written.',
};

/**
 * Longest address a batch takes: four times the 254 octets an address may have (RFC 5321
 * 4.5.3.1.3 with RFC 3696 errata), room for any Unicode spelling of one.
 */
export const MAX_EMAIL_INPUT_LENGTH = 1024;

/**
 * The `email` of a single verify: any string but the empty one (no address given). Whatever
 * it holds is an address to judge, as the engine judges it: a control character or a string
 * longer than any address is an `invalid_email` verdict, charged as any verdict is, so that
 * the library, the CLI and the API give one answer for one input.
 */
export function assertEmailInput(value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) {
    throw invalidRequest('email', 'email must be a non-empty string');
  }
}

/** An optional AbortSignal, else `invalid_request` naming `signal`. */
export function optionalSignal(value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined;
  let signal = false;
  try {
    signal = value instanceof AbortSignal; // a Proxy's getPrototypeOf trap may throw
  } catch {
    // refused below
  }
  if (!signal) throw invalidRequest('signal', 'signal must be an AbortSignal');
  return value as AbortSignal;
}

/** Largest page of ledger entries one call returns. */
export const MAX_LEDGER_PAGE = 10_000;

/**
 * The page of `admin.ledger`: `after_seq` a sequence number (0 or more), `limit` 1 to
 * MAX_LEDGER_PAGE; both optional. Checked here so that no store sees a NaN or a negative
 * limit (SQLite reads -1 as no limit, an array slice as "all but the last").
 */
export function requireLedgerPage(page: unknown): { afterSeq?: number; limit?: number } {
  const fields = optionalObject(page, 'page');
  return {
    ...(fields.afterSeq === undefined
      ? {}
      : {
          afterSeq: requireInteger(fields.afterSeq, 'after_seq', 0, Number.MAX_SAFE_INTEGER),
        }),
    ...(fields.limit === undefined
      ? {}
      : { limit: requireInteger(fields.limit, 'limit', 1, MAX_LEDGER_PAGE) }),
  };
}

const LEDGER_KINDS: readonly LedgerRequest['kind'][] = [
  'grant',
  'reserve',
  'settle',
  'release',
  'refund',
];

/**
 * A ledger request from outside, rebuilt from its checked fields only (an extra or inherited
 * property never reaches a store): each refusal names its field, so the two stores cannot
 * disagree on a malformed request.
 */
export function requireLedgerRequest(value: unknown): LedgerRequest {
  const fields = requireObject(value, 'request');
  const kind = requireOneOf(fields.kind, 'kind', LEDGER_KINDS);
  const ref = requireText(fields.ref, 'ref');
  const note = fields.note === undefined ? {} : { note: requireText(fields.note, 'note', 500) };
  switch (kind) {
    case 'grant':
      return {
        kind,
        ref,
        amount: requireInteger(fields.amount, 'amount', 1, MAX_LEDGER_AMOUNT),
        ...note,
      };
    case 'reserve':
      return {
        kind,
        ref,
        amount: requireInteger(fields.amount, 'amount', 1, MAX_LEDGER_AMOUNT),
        ...(fields.expiresAt === undefined
          ? {}
          : {
              expiresAt: requireInteger(fields.expiresAt, 'expires_at', 0, Number.MAX_SAFE_INTEGER),
            }),
        ...note,
      };
    case 'settle':
      return {
        kind,
        ref,
        reservation: requireText(fields.reservation, 'reservation'),
        amount: requireInteger(fields.amount, 'amount', 1, MAX_LEDGER_AMOUNT),
        ...note,
      };
    case 'release':
    case 'refund':
      return {
        kind,
        ref,
        reservation: requireText(fields.reservation, 'reservation'),
        ...(fields.amount === undefined
          ? {}
          : { amount: requireInteger(fields.amount, 'amount', 1, MAX_LEDGER_AMOUNT) }),
        ...note,
      };
  }
}

/**
 * The smtp method on an engine that cannot probe would be a verdict nobody checked, sold for
 * 10 credits: refused before anything is reserved.
 */
export function requireUsableMethod(method: MethodName, canProbe: boolean): MethodName {
  if (method === 'smtp' && !canProbe) {
    throw invalidRequest(
      'method',
      'The smtp method is not available here: this service verifies offline (no mail server can be reached). Use quick or standard.',
    );
  }
  return method;
}
