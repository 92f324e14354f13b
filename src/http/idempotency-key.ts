import { requestIdOf } from '../service/request-fields.js';
import { ServiceError } from '../service/service-error.js';
import type { HandlerRequest } from './exchange.js';

/** The header's name as `field` names it, lowercase like `content-type`. */
const FIELD = 'idempotency-key';

/**
 * The `Idempotency-Key` header (the service's `requestId`, by the same rule), checked before
 * the key is read so that a malformed one costs nothing: absent is undefined; empty, too long
 * or with a control character is a 400 naming the header.
 */
export function idempotencyKey(request: HandlerRequest): string | undefined {
  const value = request.headers.get(FIELD);
  return value === null ? undefined : requestIdOf(value, FIELD);
}

/**
 * Runs a service call whose refusals about its `requestId` (409 `idempotency_conflict`,
 * `request_in_progress`) name `request_id`, the library's word: over HTTP the caller sent the
 * Idempotency-Key header, and `field` names what the caller sent.
 */
export async function namingIdempotencyKey<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ServiceError && error.context.field === 'request_id') {
      throw new ServiceError(
        error.code,
        error.message,
        { ...error.context, field: FIELD },
        { cause: error, ...(error.rateLimit === undefined ? {} : { rateLimit: error.rateLimit }) },
      );
    }
    throw error;
  }
}
