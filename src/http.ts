/**
 * mailverdict/http: the /v1 API as a web-standard fetch handler, `(Request) => Promise<Response>`,
 * for any host that speaks fetch (Hono, Bun, Deno, workers; Express and node:http through an
 * adapter, or `mailverdict/node`). Imports nothing of node:http.
 */
export { createHandler } from './http/handler.js';
export type { FetchHandler, HandlerOptions } from './http/handler.js';
export type { OperationsOptions } from './http/operations.js';
export type { MetricsEndpoint, Observer } from './ports/observer.js';
export type { HandlerRequest } from './http/exchange.js';
export { REMOTE_ADDRESS, resolveClientIp, withRemoteAddress } from './http/client-ip.js';
export { PREFLIGHT_MAX_AGE_S } from './http/cors.js';
export { OPENAPI_DOCUMENT } from './http/openapi.js';
export { MAX_QUERY_LENGTH } from './http/query.js';
export { MAX_BODY_BYTES, MAX_JSON_DEPTH, MAX_JSON_ELEMENTS } from './http/request-body.js';
export { HttpError } from './http/responses.js';
