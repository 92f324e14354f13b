/**
 * The route table of the /v1 API: every path, the methods it takes, and for each operation the
 * query parameters and JSON body fields it accepts. The handler dispatches on it (an unknown
 * parameter or field is a 400 naming it), the OpenAPI document lists its paths and parameters
 * from it (openapi.ts), and the tests find a request's operation through `matchRoute`. A new
 * route is a new entry here, a handler under its operation id (handler.ts) and its description
 * (openapi.ts): the compiler asks for the last two.
 */

/** The query parameters any operation may take; openapi.ts documents each. */
export type QueryParameter =
  | 'email'
  | 'method'
  | 'detailed'
  | 'fields'
  | 'smtp'
  | 'site_source'
  | 'format'
  | 'filter_type'
  | 'page'
  | 'per_page'
  | 'api_key';

/** The JSON bodies operations take, by their schema's name in the document, and their fields. */
export const REQUEST_BODIES = {
  BatchRequest: ['emails', 'method', 'callback_url'],
  NewFilter: ['value', 'filter_type', 'action', 'reason'],
} as const satisfies Readonly<Record<string, readonly string[]>>;

export type RequestBodyName = keyof typeof REQUEST_BODIES;

/** One method of one path. */
export interface Operation {
  /** The operation's id in the document, and the key of its handler. */
  readonly operationId: string;
  /**
   * The query parameters it takes, each at most once; any other is refused. Undefined: the
   * query is not read at all (the document itself, which a cache-buster may follow).
   */
  readonly query?: readonly QueryParameter[];
  /** The JSON body it reads, if any: only its fields are taken. */
  readonly body?: RequestBodyName;
  /** Whether an `Idempotency-Key` header is read. */
  readonly idempotencyKey?: boolean;
}

export type RouteMethod = 'GET' | 'POST' | 'DELETE';

export interface RouteSpec {
  /** The path template: literal segments and `{id}` for one segment that names a resource. */
  readonly path: string;
  readonly operations: Readonly<Partial<Record<RouteMethod, Operation>>>;
}

const KEY_ONLY: readonly QueryParameter[] = ['api_key'];

/** By route name: the label metrics count requests under (never the path, whose ids vary). */
export const ROUTES = {
  verify: {
    path: '/v1/verify',
    operations: {
      GET: {
        operationId: 'verify',
        query: ['email', 'method', 'detailed', 'fields', 'smtp', 'site_source', 'api_key'],
        idempotencyKey: true,
      },
      POST: {
        operationId: 'submitBatch',
        query: KEY_ONLY,
        body: 'BatchRequest',
        idempotencyKey: true,
      },
    },
  },
  batch: {
    path: '/v1/verify/{id}',
    operations: { GET: { operationId: 'batchStatus', query: KEY_ONLY } },
  },
  batch_results: {
    path: '/v1/verify/{id}/results',
    operations: { GET: { operationId: 'batchResults', query: ['format', 'api_key'] } },
  },
  batch_webhook: {
    path: '/v1/verify/{id}/webhook',
    operations: { POST: { operationId: 'redeliverWebhook', query: KEY_ONLY } },
  },
  filters: {
    path: '/v1/filters',
    operations: {
      GET: { operationId: 'listFilters', query: ['filter_type', 'page', 'per_page', 'api_key'] },
      POST: { operationId: 'createFilter', query: KEY_ONLY, body: 'NewFilter' },
    },
  },
  filter: {
    path: '/v1/filters/{id}',
    operations: { DELETE: { operationId: 'deleteFilter', query: KEY_ONLY } },
  },
  account: {
    path: '/v1/account',
    operations: { GET: { operationId: 'account', query: KEY_ONLY } },
  },
  openapi: {
    path: '/v1/openapi.json',
    operations: { GET: { operationId: 'openapi' } },
  },
} as const satisfies Readonly<Record<string, RouteSpec>>;

export type RouteName = keyof typeof ROUTES;

type OperationsOf<R> = R extends { operations: infer O } ? O[keyof O] : never;
/** Every operation id of the table: the handler and the document each need one entry per id. */
export type OperationId =
  OperationsOf<(typeof ROUTES)[RouteName]> extends infer O
    ? O extends { operationId: infer I }
      ? I
      : never
    : never;

/** A path matched against the table: the route, its name, and its `{id}` segment (or ''). */
export interface MatchedRoute {
  readonly name: RouteName;
  readonly route: RouteSpec;
  /** The `{id}` segment as it appeared in the path, still percent-encoded. */
  readonly id: string;
}

const TEMPLATES = Object.entries(ROUTES).map(([name, route]) => ({
  name: name as RouteName,
  route: route as RouteSpec,
  segments: route.path.split('/'),
}));

/**
 * The route a path names, or undefined (404). Segments are compared as they are, still
 * percent-encoded: a literal segment matches only its own spelling, and `{id}` one non-empty
 * segment (so `/v1/verify/` and `/v1/account/` name nothing).
 */
export function matchRoute(pathname: string): MatchedRoute | undefined {
  const segments = pathname.split('/');
  for (const template of TEMPLATES) {
    if (template.segments.length !== segments.length) continue;
    let id = '';
    const matches = template.segments.every((part, index) => {
      const segment = segments[index] as string;
      if (part !== '{id}') return part === segment;
      id = segment;
      return segment !== '';
    });
    if (matches) return { name: template.name, route: template.route, id };
  }
  return undefined;
}

/**
 * The path of an absolute URL as it was written: no dot segment resolved, nothing decoded.
 * WHATWG URL parsing resolves `..` and `%2e%2e` (and reads `\` as `/`), so that
 * `/v1/verify/%2e%2e/account` would become `/v1/account`, and a proxy that allows or blocks by
 * path would see another route than ours. Matched as written, such a path names no route.
 */
export function rawPathname(url: string): string {
  let start = url.indexOf('//') + 2;
  while (start < url.length && !PATH_START.has(url[start] as string)) start++;
  if (url[start] !== '/') return '/';
  let end = start;
  while (end < url.length && url[end] !== '?' && url[end] !== '#') end++;
  return url.slice(start, end);
}

/** What ends the authority of a URL: the path, the query or the fragment. */
const PATH_START = new Set(['/', '?', '#']);
