import type { RateLimitStatus } from '../service/rate-limit-status.js';
import { ServiceError } from '../service/service-error.js';

/**
 * A refusal of the HTTP layer itself, before the service is asked: a wrong method, a body
 * that is not JSON, a route that does not exist. It answers the same envelope as a
 * ServiceError (`{ error, message, ...context }`), with the few codes HTTP adds.
 */
export class HttpError extends Error {
  override readonly name = 'HttpError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly context: Readonly<Record<string, unknown>> = {},
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

/** `invalid_request` of the HTTP layer, naming the parameter at fault. */
export function badRequest(field: string, message: string): HttpError {
  return new HttpError(400, 'invalid_request', message, { field });
}

/**
 * The client went away before it was answered: it aborted its upload, or closed the
 * connection while we worked. No error of ours, so never reported as one; its status is
 * nginx's 499 "client closed request", which only metrics see (nobody is left to read it).
 */
export function clientClosedRequest(): HttpError {
  return new HttpError(
    CLIENT_CLOSED_REQUEST,
    'client_closed_request',
    'The client closed the connection before the answer.',
  );
}

/** nginx's status for a request whose client left first: never sent, only counted. */
export const CLIENT_CLOSED_REQUEST = 499;

/** Headers every answer carries: JSON, never cached, never sniffed. */
const JSON_HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
} as const;

/**
 * An answer before it is a Response: status, lowercase headers, and a body that is text, a
 * stream or nothing. Routes build these; the fetch handler makes a Response of each, and
 * mailverdict/node writes them to the socket directly, since a web Response with a body costs
 * 25-50 us to construct on Node 20 (measured), more than answering a verify does.
 */
export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string | ReadableStream<Uint8Array> | null;
}

/** A JSON answer with the given status and extra headers. */
export function json(
  status: number,
  body: unknown,
  headers?: Readonly<Record<string, string>>,
): Reply {
  return {
    status,
    headers: headers === undefined ? { ...JSON_HEADERS } : { ...JSON_HEADERS, ...headers },
    body: JSON.stringify(body),
  };
}

/** The web Response of a Reply. */
export function toResponse(reply: Reply): Response {
  return new Response(reply.body, { status: reply.status, headers: reply.headers });
}

/** X-RateLimit-*: the per-minute limit, what is left, the reset in Unix seconds. */
export function rateLimitHeaders(status: RateLimitStatus): Record<string, string> {
  return {
    'x-ratelimit-limit': String(status.limit),
    'x-ratelimit-remaining': String(status.remaining),
    'x-ratelimit-reset': String(status.reset),
  };
}

/** The challenge of every 401 (RFC 6750 3): a bearer key. */
const BEARER_CHALLENGE = 'Bearer realm="mailverdict"';

/**
 * The one place an error becomes a response (STYLE: errors). A ServiceError or HttpError is
 * its envelope; a 429 adds Retry-After; anything else is a bug: reported through `onError`
 * and answered a generic 500 that says nothing about our internals.
 */
export function errorReply(error: unknown, report: (error: unknown) => void): Reply {
  if (error instanceof HttpError) {
    return json(
      error.status,
      { error: error.code, message: error.message, ...error.context },
      error.headers,
    );
  }
  if (error instanceof ServiceError && error.code !== 'internal_error') {
    // The key's X-RateLimit figures are the handler's to add (finish), on this as on any answer.
    const headers: Record<string, string> = {};
    const retryAfter = error.context.retry_after;
    if (error.code === 'rate_limit_exceeded' && typeof retryAfter === 'number') {
      headers['retry-after'] = String(retryAfter);
    }
    // RFC 9110 11.6.1: a 401 carries a challenge naming the scheme that would do.
    if (error.code === 'unauthorized') headers['www-authenticate'] = BEARER_CHALLENGE;
    return json(error.status, error.toJSON(), headers);
  }
  report(error);
  // A ServiceError's internal_error message is written for callers (the store failed, a hold
  // lapsed); anything else may carry a path, a query or a stack in its message.
  const message =
    error instanceof ServiceError
      ? error.message
      : 'Something went wrong on our side; the request may be retried.';
  return json(500, { error: 'internal_error', message });
}
