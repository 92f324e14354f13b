import type { Reply } from './responses.js';

/**
 * CORS for public keys: a page on a key's trusted domain calls GET /v1/verify from
 * the browser. A preflight carries no key, so it cannot be checked against one: it is answered
 * for the one route public keys may call, and the real request is then judged by its key.
 * Only a public key's successful admission (or its refusals that are the visitor's to read, a
 * 429 or a 402) puts Access-Control-Allow-Origin on the answer: an untrusted page gets a 403
 * that its browser will not let it read.
 */

/** Headers a page may send on its verify call. */
const ALLOWED_HEADERS = 'authorization, idempotency-key';
/** Headers a page may read from the answer. */
const EXPOSED_HEADERS = 'x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, retry-after';
/** How long a browser may cache a preflight's answer, in seconds. */
export const PREFLIGHT_MAX_AGE_S = 600;

/**
 * The answer to a preflight of GET /v1/verify from `origin`; `allow` is the route's own list,
 * the same whether or not the OPTIONS came from a page. An opaque origin (`null`: a sandboxed
 * iframe, a `data:` page) is granted nothing: no key trusts it, and `Access-Control-Allow-Origin:
 * null` would let every such page read the answer.
 */
export function preflightReply(
  origin: string,
  requestedMethod: string | null,
  allow: string,
): Reply {
  const headers: Record<string, string> = {
    allow,
    vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
  };
  if (requestedMethod === 'GET' && origin !== 'null') {
    headers['access-control-allow-origin'] = origin;
    headers['access-control-allow-methods'] = 'GET';
    headers['access-control-allow-headers'] = ALLOWED_HEADERS;
    headers['access-control-max-age'] = String(PREFLIGHT_MAX_AGE_S);
  }
  return { status: 204, headers, body: null };
}

/** Headers that let the page at `origin` read an answer to its public key. */
export function corsHeaders(origin: string): Record<string, string> {
  return {
    'access-control-allow-origin': origin,
    'access-control-expose-headers': EXPOSED_HEADERS,
    vary: 'Origin',
  };
}
