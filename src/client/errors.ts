/**
 * What a call that did not succeed throws. The server's refusals are an `ApiError` with the
 * status and the envelope's `error` code; a call that got no usable answer (no connection,
 * a reset, a timeout, a body that is not the API's, a redirect) is a `NetworkError`, which is
 * an ApiError too, with status 0: `catch (e) { if (e instanceof ApiError) ... }` sees both,
 * and `e.status === 0` (or `instanceof NetworkError`) tells them apart.
 */

/** A refusal of the server: its status, the envelope's code and message, and its context. */
export class ApiError extends Error {
  override name = 'ApiError';
  /** The HTTP status; 0 for a NetworkError. */
  readonly status: number;
  /** The envelope's `error` (`rate_limit_exceeded`, `insufficient_credits`, ...). */
  readonly code: string;
  /**
   * The envelope's other fields: `field` and `allowed` (invalid_request), `needed` and
   * `available` (insufficient_credits), `retry_after`, a job's progress (batch_not_completed).
   */
  readonly details: Readonly<Record<string, unknown>>;
  /** Seconds the server asked to wait before another try (Retry-After), when it said. */
  readonly retryAfter: number | undefined;

  constructor(
    status: number,
    code: string,
    message: string,
    options: {
      details?: Readonly<Record<string, unknown>>;
      retryAfter?: number | undefined;
      cause?: unknown;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.code = code;
    this.details = options.details ?? {};
    this.retryAfter = options.retryAfter;
  }
}

/**
 * Why a call got no usable answer:
 * - `connection_failed`: no connection, or it broke before the answer was whole (retried);
 * - `timeout`: no answer, or no byte of it, within timeoutMs (retried);
 * - `invalid_response`: an answer that is not the API's (not JSON, not the expected shape,
 *   larger than maxResponseBytes), not retried: the same server would answer the same;
 * - `redirect`: the server redirected; redirects are never followed, so that the API key is
 *   never sent anywhere but baseUrl's origin.
 */
export type NetworkErrorCode = 'connection_failed' | 'timeout' | 'invalid_response' | 'redirect';

/** A call that got no usable answer from the server (status 0); `cause` holds the underlying error. */
export class NetworkError extends ApiError {
  override name = 'NetworkError';
  declare readonly code: NetworkErrorCode;

  constructor(code: NetworkErrorCode, message: string, cause?: unknown) {
    super(0, code, message, cause === undefined ? {} : { cause });
  }
}

/** Retried by the rules (a broken connection or a timeout), unlike a bad answer or a redirect. */
export function isTransient(error: NetworkError): boolean {
  return error.code === 'connection_failed' || error.code === 'timeout';
}
