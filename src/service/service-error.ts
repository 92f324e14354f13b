import type { RateLimitStatus } from './rate-limit-status.js';

/** The snake_case codes of the error envelope, each with its HTTP status. */
export const SERVICE_ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_credits: 402,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  /** An idempotency key reused with a different request. */
  idempotency_conflict: 409,
  /** An idempotency key whose first request is still running. */
  request_in_progress: 409,
  batch_not_completed: 409,
  payload_too_large: 413,
  rate_limit_exceeded: 429,
  internal_error: 500,
} as const;

export type ServiceErrorCode = keyof typeof SERVICE_ERROR_STATUS;

/**
 * Every refusal of the service: one class with a wire code, its HTTP status and the context
 * the JSON envelope carries (`needed`/`available`, `retry_after`, the offending `field`). The
 * HTTP layer turns it into `{ error: code, message, ...context }` in one place.
 */
export class ServiceError extends Error {
  override readonly name = 'ServiceError';
  readonly status: number;
  /** On refusals of an identified key: the figures for the X-RateLimit-* headers. */
  readonly rateLimit: RateLimitStatus | undefined;

  constructor(
    readonly code: ServiceErrorCode,
    message: string,
    readonly context: Readonly<Record<string, unknown>> = {},
    options: { cause?: unknown; rateLimit?: RateLimitStatus } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = SERVICE_ERROR_STATUS[code];
    this.rateLimit = options.rateLimit;
  }

  /** The JSON envelope: `{ error, message, ...context }`. */
  toJSON(): Record<string, unknown> {
    return { error: this.code, message: this.message, ...this.context };
  }
}

/** `invalid_request` naming the field at fault, so a client knows what to fix. */
export function invalidRequest(field: string, message: string): ServiceError {
  return new ServiceError('invalid_request', message, { field });
}
