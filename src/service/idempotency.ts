import type { IdempotencyRecord } from '../ports/store.js';
import { ServiceError } from './service-error.js';

/**
 * What an idempotency key already bound answers a request (as Stripe does it):
 * the first answer, stored, for the same request; 409 `idempotency_conflict` for another
 * request under the same key; 409 `request_in_progress` while the first is still running.
 */
export function firstAnswer<T>(record: IdempotencyRecord, fingerprint: string): T {
  if (record.fingerprint !== fingerprint) {
    throw new ServiceError(
      'idempotency_conflict',
      'This idempotency key was used for a different request within the last 24 hours.',
      { field: 'request_id' },
    );
  }
  if (record.answer === null) {
    throw new ServiceError(
      'request_in_progress',
      'The first request with this idempotency key is still running; retry shortly.',
      { field: 'request_id' },
    );
  }
  return JSON.parse(record.answer) as T;
}
