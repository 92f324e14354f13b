import { StoreError } from '../store/store-error.js';
import { invalidRequest, ServiceError } from './service-error.js';

/** A string field within limits, else `invalid_request` naming it. */
export function requireText(value: unknown, field: string, maxLength = 200): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    throw invalidRequest(field, `${field} must be a string of 1 to ${maxLength} characters`);
  }
  return value;
}

/** An optional string field: undefined, null or within limits. */
export function optionalText(value: unknown, field: string, maxLength = 200): string | null {
  return value === undefined || value === null ? null : requireText(value, field, maxLength);
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
  if (!Array.isArray(value) || value.length > maxItems) {
    throw invalidRequest(field, `${field} must be an array of at most ${maxItems} ${what}s`);
  }
  const normalized = value.map((item, index) => {
    const result = typeof item === 'string' ? normalize(item) : undefined;
    if (result === undefined) {
      throw invalidRequest(
        field,
        `${field}[${index}] is not a valid ${what}: ${JSON.stringify(item)}`,
      );
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
      return new ServiceError(
        'internal_error',
        `The data store failed: ${error.message}`,
        {},
        { cause: error },
      );
  }
}
