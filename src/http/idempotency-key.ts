import { MAX_REQUEST_ID_LENGTH } from '../service/charging.js';
import { ServiceError } from '../service/service-error.js';
import { CONTROL_CHARACTER } from '../service/validate.js';
import type { HandlerRequest } from './exchange.js';
import { badRequest } from './responses.js';

/** The header's name as `field` names it, lowercase like `content-type`. */
const FIELD = 'idempotency-key';

/**
 * The `Idempotency-Key` header (DESIGN 7: the service's `requestId`), checked before the key is
 * read so that a malformed one costs nothing: absent is undefined; empty, longer than 255
 * characters or with a control character is a 400 naming the header.
 */
export function idempotencyKey(request: HandlerRequest): string | undefined {
  const value = request.headers.get(FIELD);
  if (value === null) return undefined;
  // A header may carry a tab; an idempotency key may not, nor may the service's requestId.
  if (value === '' || value.length > MAX_REQUEST_ID_LENGTH || CONTROL_CHARACTER.test(value)) {
    throw badRequest(
      FIELD,
      `Idempotency-Key must be 1 to ${MAX_REQUEST_ID_LENGTH} characters without control characters.`,
    );
  }
  return value;
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
