import type { Logger } from '../ports/logger.js';
import { baseUrlOf } from '../service/batch/results.js';
import { ServiceError } from '../service/service-error.js';
import type { Service } from '../service/service.js';
import { accountRoute } from './account-route.js';
import {
  batchResultsRoute,
  batchStatusRoute,
  redeliverWebhookRoute,
  submitBatchRoute,
} from './batch-route.js';
import { remoteAddress, trustedProxyRanges } from './client-ip.js';
import { corsHeaders, preflightReply } from './cors.js';
import { Exchange, type HandlerConfig, type HandlerRequest } from './exchange.js';
import { createFilterRoute, deleteFilterRoute, listFiltersRoute } from './filters-route.js';
import { OPENAPI_DOCUMENT } from './openapi.js';
import { operationsRoutes, type OperationsOptions } from './operations.js';
import {
  checkJsonHeaders,
  MAX_BODY_BYTES,
  MAX_JSON_DEPTH,
  MAX_JSON_ELEMENTS,
} from './request-body.js';
import {
  clientClosedRequest,
  errorReply,
  HttpError,
  rateLimitHeaders,
  toResponse,
  type Reply,
} from './responses.js';
import { readQuery } from './query.js';
import {
  matchRoute,
  rawPathname,
  ROUTES,
  type Operation,
  type OperationId,
  type RouteName,
  type RouteSpec,
} from './routes.js';
import { verifyRoute } from './verify-route.js';

export interface HandlerOptions {
  /**
   * The public base URL of the API (`https://api.example.com`), for the absolute
   * `download_url` of finished batches: each job submitted here keeps it, so that its status
   * and its webhook (sent by whichever process finishes it) give one URL. Its path is kept, a
   * query or fragment dropped, and a value that is no URL throws here. Default: the service's
   * `batch.baseUrl`, else `defaultBaseUrl`; with none, `download_url` is the path alone
   * (`/v1/verify/{id}/results`). Never a request's Host or target, which anyone can write.
   */
  readonly baseUrl?: string;
  /**
   * The base URL when neither `baseUrl` nor the service's `batch.baseUrl` is set:
   * `mailverdict/node`'s serve() passes the address it listens on. Default: none.
   */
  readonly defaultBaseUrl?: string;
  /**
   * The address of the peer that sent `request`, as the host server saw its socket (a Request
   * has no socket). Default: what `mailverdict/node` attached to the request.
   */
  readonly clientIp?: (request: HandlerRequest) => string | undefined;
  /**
   * Addresses or CIDR ranges of the reverse proxies in front of the server. Only a request
   * from one of these has its X-Forwarded-For read; by default none is, and no one can claim
   * an address by writing the header.
   */
  readonly trustedProxies?: readonly string[];
  /** Answer CORS for public keys (preflights of GET /v1/verify, trusted origins). Default true. */
  readonly cors?: boolean;
  /**
   * Largest POST body in bytes; more is a 413, refused on its Content-Length before a byte is
   * read, or as soon as the count passes it. Default 16 MiB.
   */
  readonly maxBodyBytes?: number;
  /** Deepest a POST body's JSON may nest (arrays and objects); deeper is a 400. Default 16. */
  readonly maxJsonDepth?: number;
  /**
   * Most elements (array elements and object members) a POST body's JSON may hold; more is a
   * 400. Default 100,000: twice the largest batch.
   */
  readonly maxJsonElements?: number;
  /**
   * Told of every error that became a 500 (bugs, a failing store), with the request, for
   * logging: the client sees only a generic `internal_error`. Default: `logger.error`, or
   * console.error without a logger.
   */
  readonly onError?: (error: unknown, request: HandlerRequest) => void;
  /**
   * Where the handler writes its lines (a pino logger is one): each 500 with its error and,
   * with `accessLog`, one line per request. Default: none.
   */
  readonly logger?: Logger;
  /**
   * One `info` line per request on `logger`: method, route template (never the path, whose ids
   * vary, nor the query, which may hold a key), status, duration, the key's id (never the key)
   * and the client IP. Default false.
   */
  readonly accessLog?: boolean;
  /**
   * `GET /health`, `GET /ready` and, with a `metrics` endpoint, `GET /metrics` (which is then
   * told of every request), beside /v1: no key, no rate limit. Default none here, since a
   * host may have its own; `mailverdict/node`'s serve() turns them on.
   */
  readonly operations?: OperationsOptions;
}

/** A fetch handler: what Hono, Bun, Deno, workers and `mailverdict/node` all mount. */
export type FetchHandler = (request: Request) => Promise<Response>;

/**
 * Where createHandler's fetch function keeps its Reply-level entry, for mailverdict/node to
 * skip building a web Request and Response per request (STYLE: measured, see Reply).
 */
export const REPLY_HANDLER: unique symbol = Symbol.for('mailverdict.replyHandler') as never;

/** The handler before its answers become Responses. */
export type ReplyHandler = (request: HandlerRequest) => Promise<Reply>;

type RouteHandler = (exchange: Exchange, id: string) => Promise<Reply>;

/** What answers each operation of the route table; the compiler asks for one per operation. */
const HANDLERS: Readonly<Record<OperationId, RouteHandler>> = {
  verify: verifyRoute,
  submitBatch: submitBatchRoute,
  batchStatus: batchStatusRoute,
  batchResults: batchResultsRoute,
  redeliverWebhook: redeliverWebhookRoute,
  listFilters: listFiltersRoute,
  createFilter: createFilterRoute,
  deleteFilter: deleteFilterRoute,
  account: accountRoute,
  openapi: async () => openApiReply(),
};

/** A method of a route as dispatched: its operation in the table (none for /health and co). */
interface Method {
  readonly operation: Operation | undefined;
  readonly handle: RouteHandler;
}

interface Route {
  /** The route's name, for metrics: never the path, whose ids would make a label per job. */
  readonly name: string;
  /** Its path template (`/v1/verify/{id}`), for logs: never the path itself. */
  readonly path: string;
  /** The methods and what each does; OPTIONS is answered for every route. */
  readonly methods: Readonly<Record<string, Method>>;
  readonly allow: string;
}

function route(name: string, path: string, methods: Record<string, Method>): Route {
  // RFC 9110 9.3.2: HEAD is GET without the content, wherever GET is.
  const all =
    methods.GET === undefined ? methods : { GET: methods.GET, HEAD: methods.GET, ...methods };
  return { name, path, methods: all, allow: [...Object.keys(all), 'OPTIONS'].join(', ') };
}

/** The route table (routes.ts), each operation with its handler. */
const API = new Map<RouteName, Route>(
  Object.entries(ROUTES).map(([name, spec]: [string, RouteSpec]) => {
    const methods: Record<string, Method> = {};
    for (const [method, operation] of Object.entries(spec.operations)) {
      methods[method] = { operation, handle: HANDLERS[operation.operationId as OperationId] };
    }
    return [name as RouteName, route(name, spec.path, methods)];
  }),
);

/** Methods a metrics label may name; any other is `other`, so no client mints labels. */
const METHOD_LABELS = new Set(['GET', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PUT', 'PATCH']);

/** The route a path names and the id segment in it, or undefined (404). */
function match(pathname: string): { route: Route; id: string } | undefined {
  const found = matchRoute(pathname);
  return found === undefined ? undefined : { route: API.get(found.name) as Route, id: found.id };
}

/**
 * The /v1 API as a web-standard fetch handler: `(Request) => Promise<Response>`,
 * framework-free, so that node:http (through `mailverdict/node`), Hono, Express (through a
 * few lines of adapter), Bun and Deno all mount it. Every refusal is the JSON envelope
 * `{ error, message, ...context }`; every answer to an identified key carries its
 * X-RateLimit-* headers.
 *
 * @example
 * import { createHandler } from 'mailverdict/http';
 * const handler = createHandler(service, { baseUrl: 'https://api.example.com' });
 * const response = await handler(new Request('https://api.example.com/v1/account', {
 *   headers: { authorization: `Bearer ${secret}` },
 * }));
 */
export function createHandler(service: Service, options: HandlerOptions = {}): FetchHandler {
  const config: HandlerConfig = {
    // As the service takes its batch.baseUrl (a bad one throws here, not at a request): the
    // path kept, query and fragment dropped.
    baseUrl: options.baseUrl === undefined ? undefined : baseUrlOf(options.baseUrl),
    defaultBaseUrl:
      options.defaultBaseUrl === undefined ? undefined : baseUrlOf(options.defaultBaseUrl),
    clientIp: options.clientIp ?? remoteAddress,
    trustedProxies: trustedProxyRanges(options.trustedProxies),
    cors: options.cors ?? true,
    body: {
      maxBytes: options.maxBodyBytes ?? MAX_BODY_BYTES,
      maxDepth: options.maxJsonDepth ?? MAX_JSON_DEPTH,
      maxElements: options.maxJsonElements ?? MAX_JSON_ELEMENTS,
    },
  };
  const { logger } = options;
  const onError =
    options.onError ??
    (logger === undefined
      ? (error: unknown) => {
          console.error('mailverdict: internal error answering a request:', error);
        }
      : undefined);

  const operations = new Map<string, Route>();
  if (options.operations !== undefined) {
    for (const [path, handle] of operationsRoutes(service, options.operations)) {
      operations.set(path, route(path.slice(1), path, { GET: { operation: undefined, handle } }));
    }
  }
  const observe = options.operations?.metrics?.observeRequest?.bind(options.operations.metrics);
  const accessLog = options.accessLog === true ? logger : undefined;

  const answerRequest = async (request: HandlerRequest, found: Seen) => {
    let answer: Reply;
    try {
      const url = new URL(request.url);
      found.exchange = new Exchange(request, url, service, config);
      // Routed on the path as the client wrote it: dot segments, encoded or not, resolve to
      // nothing (rawPathname).
      const path = rawPathname(request.url);
      const at = operations.get(path);
      answer = await dispatch(
        found.exchange,
        at === undefined ? match(path) : { route: at, id: '' },
        found,
      );
    } catch (error) {
      answer = errorReply(clientGone(error, request) ? clientClosedRequest() : error, (bug) => {
        if (onError !== undefined) onError(bug, request);
        else {
          logger?.error(
            { event: 'request.error', ...requestFields(request, found), err: bug },
            'Internal error answering a request; the client was told only that it happened',
          );
        }
      });
    }
    if (request.method === 'HEAD') answer = await withoutContent(answer);
    return found.exchange === undefined ? answer : finish(found.exchange, answer);
  };
  const reply: ReplyHandler =
    observe === undefined && accessLog === undefined
      ? (request) => answerRequest(request, {})
      : async (request) => {
          const started = performance.now();
          const found: Seen = {};
          const answer = await answerRequest(request, found);
          const method = METHOD_LABELS.has(request.method) ? request.method : 'other';
          const seconds = (performance.now() - started) / 1000;
          observe?.(found.route?.name ?? 'unmatched', method, answer.status, seconds);
          accessLog?.info(
            {
              event: 'request',
              ...requestFields(request, found),
              status: answer.status,
              duration_ms: Math.round(seconds * 1e6) / 1e3,
              key_id: found.exchange?.caller?.key.id ?? null,
              client_ip: found.exchange?.clientIp ?? null,
            },
            'Request answered',
          );
          return answer;
        };
  const fetch: FetchHandler = async (request) => toResponse(await reply(request));
  Object.defineProperty(fetch, REPLY_HANDLER, { value: reply });
  return fetch;
}

/** What the handler learned of a request on its way: its route, and the exchange it became. */
interface Seen {
  route?: Route;
  exchange?: Exchange;
}

/**
 * How a request is named in a log line: its method (one of a closed set) and its route's
 * template, never its path or query (ids vary; an `api_key` parameter is a secret).
 */
function requestFields(request: HandlerRequest, found: Seen): Record<string, string | null> {
  return {
    method: METHOD_LABELS.has(request.method) ? request.method : 'other',
    route: found.route?.path ?? null,
  };
}

/** The Reply-level entry of a handler createHandler made, if `handler` is one. */
export function replyHandlerOf(handler: FetchHandler): ReplyHandler | undefined {
  const entry = (handler as unknown as Record<symbol, unknown>)[REPLY_HANDLER];
  return typeof entry === 'function' ? (entry as ReplyHandler) : undefined;
}

async function dispatch(
  exchange: Exchange,
  found: { route: Route; id: string } | undefined,
  matched: { route?: Route },
): Promise<Reply> {
  if (found === undefined) {
    throw new HttpError(404, 'not_found', 'No such endpoint; see /v1/openapi.json.');
  }
  matched.route = found.route;
  const { method } = exchange.request;
  if (method === 'OPTIONS') return options(exchange, found.route);
  const handling = found.route.methods[method];
  if (handling === undefined) {
    throw new HttpError(
      405,
      'method_not_allowed',
      `${method.slice(0, 16)} is not allowed here; allowed: ${found.route.allow}.`,
      {},
      { allow: found.route.allow },
    );
  }
  // Unknown and repeated parameters are refused here, before the route reads any, by the
  // table the document lists them from.
  const query = handling.operation?.query;
  if (query !== undefined) exchange.query = readQuery(exchange.url, query);
  // What the headers tell of a body (its type, its declared length) is refused here too; the
  // body itself is read only once the key is admitted (Exchange.jsonBody).
  if (handling.operation?.body !== undefined) {
    checkJsonHeaders(exchange.request.headers, exchange.config.body.maxBytes);
  }
  return handling.handle(exchange, found.id);
}

/**
 * Whether `error` is the client's leaving rather than a fault of ours: an error that is no
 * refusal, thrown once the request's signal says the client went away (a verification it
 * cut short, a store call it abandoned). Such a request is answered 499 and not reported.
 */
function clientGone(error: unknown, request: HandlerRequest): boolean {
  if (error instanceof HttpError) return false;
  if (error instanceof ServiceError && error.code !== 'internal_error') return false;
  return request.signal.aborted;
}

const UTF8 = new TextEncoder();

/**
 * The answer to a HEAD: the GET's status and headers, its length if known, and no content (a
 * stream of results is cancelled unread).
 */
async function withoutContent(reply: Reply): Promise<Reply> {
  if (reply.body === null) return reply;
  if (typeof reply.body === 'string') {
    const length = String(UTF8.encode(reply.body).byteLength);
    return { ...reply, headers: { ...reply.headers, 'content-length': length }, body: null };
  }
  await reply.body.cancel();
  return { ...reply, body: null };
}

/** A CORS preflight of GET /v1/verify, or the methods a route takes. */
function options(exchange: Exchange, found: Route): Reply {
  const { headers } = exchange.request;
  const origin = headers.get('origin');
  if (found === API.get('verify') && origin !== null && exchange.config.cors) {
    return preflightReply(origin, headers.get('access-control-request-method'), found.allow);
  }
  return { status: 204, headers: { allow: found.allow }, body: null };
}

/**
 * Puts the identified key's rate-limit figures and any CORS grant on the answer: every answer
 * of a /v1 route passes here, so every answer to a known key carries its figures,
 * refusals included. A refusal that came before the key was looked up (a malformed parameter,
 * an unknown route) asks for them without counting the request; only a refusal does, so a
 * route that answers without a key (the OpenAPI document) costs no look-up.
 */
function finish(exchange: Exchange, reply: Reply): Reply | Promise<Reply> {
  if (
    exchange.rateLimit === undefined &&
    !exchange.authenticated &&
    reply.status >= 400 &&
    reply.status < 500 &&
    exchange.url.pathname.startsWith('/v1/')
  ) {
    return exchange.uncountedRateLimit().then((figures) => {
      exchange.rateLimit = figures;
      return withFigures(exchange, reply);
    });
  }
  return withFigures(exchange, reply);
}

function withFigures(exchange: Exchange, reply: Reply): Reply {
  const { rateLimit, corsOrigin } = exchange;
  if (rateLimit === undefined && corsOrigin === undefined) return reply;
  const headers =
    rateLimit === undefined ? reply.headers : { ...reply.headers, ...rateLimitHeaders(rateLimit) };
  return {
    ...reply,
    headers: corsOrigin === undefined ? headers : { ...headers, ...corsHeaders(corsOrigin) },
  };
}

let openApiBody: string | undefined;

function openApiReply(): Reply {
  // Serialized once: 40 KB of JSON is worth not rebuilding per request.
  openApiBody ??= JSON.stringify(OPENAPI_DOCUMENT);
  return {
    status: 200,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'public, max-age=3600',
      'access-control-allow-origin': '*',
    },
    body: openApiBody,
  };
}
