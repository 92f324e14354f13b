import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'vitest';
import { withRemoteAddress } from '../../src/http/client-ip.js';
import { createHandler, type HandlerOptions } from '../../src/http/handler.js';
import { serve, type RunningServer } from '../../src/http/node-server.js';
import { OPENAPI_DOCUMENT } from '../../src/http/openapi.js';
import { MAX_QUERY_LENGTH } from '../../src/http/query.js';
import { matchRoute } from '../../src/http/routes.js';
import type { Service } from '../../src/service/service.js';

/** What a test sees of an answer: status, headers, and the body parsed when it is JSON. */
export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read JSON freely
  readonly body: any;
}

export interface CallInit {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Uint8Array | ReadableStream<Uint8Array>;
  /** Direct calls only: the peer address the host reports. Over HTTP it is 127.0.0.1. */
  readonly ip?: string;
}

/** One way to reach the API: the handler called directly, or mailverdict/node over loopback. */
export interface Client {
  readonly name: 'handler' | 'node';
  call(path: string, init?: CallInit): Promise<Reply>;
  close(): Promise<void>;
}

/** The peer address direct calls report unless told otherwise. */
export const DIRECT_IP = '198.51.100.7';

export async function directClient(
  service: Service,
  options: HandlerOptions = {},
): Promise<Client> {
  const handler = createHandler(service, { onError: () => undefined, ...options });
  return {
    name: 'handler',
    async call(path, init = {}) {
      const request = new Request(`http://mv.test${path}`, requestInit(init));
      return reply(path, init, await handler(withRemoteAddress(request, init.ip ?? DIRECT_IP)));
    },
    close: async () => undefined,
  };
}

export async function nodeClient(
  service: Service,
  options: HandlerOptions = {},
): Promise<Client & { server: RunningServer }> {
  const server = await serve(service, { onError: () => undefined, ...options });
  return {
    name: 'node',
    server,
    async call(path, init = {}) {
      return reply(path, init, await fetch(`${server.url}${path}`, requestInit(init)));
    },
    close: () => server.close(),
  };
}

function requestInit(init: CallInit): RequestInit {
  return {
    method: init.method ?? 'GET',
    ...(init.headers === undefined ? {} : { headers: init.headers }),
    ...(init.body === undefined ? {} : { body: init.body, duplex: 'half' }),
  } as RequestInit;
}

async function reply(path: string, init: CallInit, response: Response): Promise<Reply> {
  const text = await response.text();
  const type = response.headers.get('content-type') ?? '';
  const body = type.startsWith('application/json') && text !== '' ? JSON.parse(text) : undefined;
  const result = { status: response.status, headers: response.headers, text, body };
  expectDocumented(init.method ?? 'GET', path, result);
  expectRequestDocumented(init.method ?? 'GET', path, init, result);
  return result;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(OPENAPI_DOCUMENT as object, 'openapi.json');

const escape = (part: string) => part.replace(/~/g, '~0').replace(/\//g, '~1');
const validators = new Map<string, ReturnType<typeof ajv.compile>>();

function validator(pointer: string): ReturnType<typeof ajv.compile> {
  let check = validators.get(pointer);
  if (check === undefined) {
    check = ajv.compile({ $ref: `openapi.json#${pointer}` });
    validators.set(pointer, check);
  }
  return check;
}

function validate(pointer: string, value: unknown): void {
  const check = validator(pointer);
  if (!check(value)) {
    throw new Error(
      `Response does not match ${pointer}: ${ajv.errorsText(check.errors)}\n${JSON.stringify(value)}`,
    );
  }
}

interface DocumentedOperation {
  readonly parameters?: readonly { readonly $ref?: string; readonly name?: string }[];
  readonly requestBody?: { readonly content: Record<string, { schema: { $ref: string } }> };
  readonly responses: Record<string, { $ref?: string }>;
}

const doc = OPENAPI_DOCUMENT as unknown as {
  paths: Record<string, Record<string, DocumentedOperation>>;
};

/** The node a JSON pointer of the document names. */
function at(pointer: string): unknown {
  return pointer
    .slice(1)
    .split('/')
    .reduce<unknown>(
      (node, part) =>
        (node as Record<string, unknown> | undefined)?.[
          part.replace(/~1/g, '/').replace(/~0/g, '~')
        ],
      OPENAPI_DOCUMENT,
    );
}

/** The operation the document gives a method and path, with its pointer, or undefined. */
function documentedOperation(
  method: string,
  pathname: string,
): { pointer: string; operation: DocumentedOperation; id: string } | undefined {
  const found = matchRoute(pathname);
  if (found === undefined) return undefined;
  const name = method.toLowerCase();
  const operation = doc.paths[found.route.path]?.[name];
  if (operation === undefined) return undefined;
  return { pointer: `/paths/${escape(found.route.path)}/${name}`, operation, id: found.id };
}

/** A parameter's text as its schema's type reads it (OpenAPI's form style for scalars). */
function parameterValue(text: string, schema: { type?: unknown; $ref?: string }): unknown {
  const type = schema.$ref === undefined ? schema.type : undefined;
  if (type === 'integer') return /^-?\d+$/.test(text) ? Number(text) : text;
  if (type === 'boolean') return text === 'true' ? true : text === 'false' ? false : text;
  return text;
}

/**
 * Why the OpenAPI document does not allow a request, or [] when it does: the operation must
 * exist; the query (at most MAX_QUERY_LENGTH characters, as the document says) holds only the
 * operation's parameters, each once, the required ones present and each value matching its
 * schema; the path id matches its schema; and a body, where the operation takes one, is JSON
 * in UTF-8 that matches the body's schema. Undefined when it cannot tell (a streamed body).
 */
export function requestViolations(
  method: string,
  path: string,
  init: CallInit,
): string[] | undefined {
  const [pathname = '', search = ''] = path.split(/\?(.*)/s);
  const found = documentedOperation(method, pathname);
  if (found === undefined) return [`no operation ${method} ${pathname}`];
  const { operation, pointer } = found;
  const violations: string[] = [];
  const parameters = (operation.parameters ?? []).map((parameter, index) => {
    const own = parameter.$ref === undefined;
    const target = own ? `${pointer}/parameters/${index}` : parameter.$ref.slice(1);
    return { ...(at(target) as { name: string; in: string; required?: boolean }), target };
  });
  if (search.length + 1 > MAX_QUERY_LENGTH) violations.push('the query is too long');
  const query = new URLSearchParams(search);
  const seen = new Set<string>();
  for (const [name, text] of query) {
    const parameter = parameters.find((p) => p.in === 'query' && p.name === name);
    if (parameter === undefined) {
      violations.push(`unknown parameter ${name}`);
      continue;
    }
    if (seen.has(name)) violations.push(`${name} given twice`);
    seen.add(name);
    const schema = `${parameter.target}/schema`;
    if (!validator(schema)(parameterValue(text, at(schema) as { type?: unknown }))) {
      violations.push(`${name}: ${ajv.errorsText(validator(schema).errors)}`);
    }
  }
  for (const parameter of parameters) {
    if (parameter.in === 'query' && parameter.required === true && !query.has(parameter.name)) {
      violations.push(`${parameter.name} is required`);
    }
    if (parameter.in === 'header') {
      const value = new Headers(init.headers).get(parameter.name);
      if (value !== null && !validator(`${parameter.target}/schema`)(value)) {
        violations.push(
          `header ${parameter.name}: ${ajv.errorsText(validator(`${parameter.target}/schema`).errors)}`,
        );
      }
    }
    if (parameter.in === 'path') {
      let id: string | undefined;
      try {
        id = decodeURIComponent(found.id);
      } catch {
        id = undefined;
      }
      if (id === undefined || !validator(`${parameter.target}/schema`)(id)) {
        violations.push(`path id ${found.id}`);
      }
    }
  }
  const content = operation.requestBody?.content;
  if (content === undefined) return violations;
  if (init.body instanceof ReadableStream) return undefined;
  const type = new Headers(init.headers).get('content-type')?.split(';')[0]?.trim() ?? '';
  const schema = content[type.toLowerCase()]?.schema.$ref;
  if (schema === undefined) return [...violations, `a body of type ${type}`];
  const bytes =
    typeof init.body === 'string' ? new TextEncoder().encode(init.body) : (init.body ?? null);
  let body: unknown;
  try {
    // As a JSON reader would: strict UTF-8, a byte order mark dropped.
    body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes ?? new Uint8Array()));
  } catch {
    return [...violations, 'a body that is not JSON in UTF-8'];
  }
  if (!validator(schema.slice(1))(body)) {
    violations.push(`body: ${ajv.errorsText(validator(schema.slice(1)).errors)}`);
  }
  return violations;
}

/**
 * The document and the server agree on every request a test sends: what the server takes
 * (2xx) the document allows, and what the document forbids the server refuses (4xx).
 */
export function expectRequestDocumented(
  method: string,
  path: string,
  init: CallInit,
  reply: Reply,
): void {
  if (method === 'OPTIONS') return;
  const violations = requestViolations(method, path, init);
  if (violations === undefined) return;
  const shown = `${method} ${path.slice(0, 200)}: ${reply.status} ${reply.text.slice(0, 200)}`;
  if (reply.status < 300) {
    expect(violations, `taken, but the document forbids it: ${shown}`).toEqual([]);
  }
  if (violations.length > 0) {
    expect(
      reply.status,
      `the document forbids it (${violations.join('; ')}): ${shown}`,
    ).toBeGreaterThanOrEqual(400);
    expect(reply.status, shown).toBeLessThan(500);
  }
}

/**
 * Every answer a test gets is checked against the OpenAPI document: its status must be
 * listed for the route and method, and a JSON body must match that status's schema.
 * Unknown routes and methods must answer the envelope.
 */
export function expectDocumented(method: string, path: string, reply: Reply): void {
  const pathname = path.split('?')[0] ?? '';
  const template = matchRoute(pathname)?.route.path;
  const operation =
    template === undefined ? undefined : doc.paths[template]?.[method.toLowerCase()];
  if (reply.status === 204 && method === 'OPTIONS') return;
  if (operation === undefined) {
    // Routes we do not have, methods a route does not take, transport-level refusals.
    expect(reply.body, `${method} ${path}: ${reply.status} ${reply.text}`).toBeDefined();
    validate('/components/schemas/Error', reply.body);
    return;
  }
  const documented = operation.responses[String(reply.status)];
  expect(
    documented,
    `${method} ${template} answered an undocumented ${reply.status}`,
  ).toBeDefined();
  const type = (reply.headers.get('content-type') ?? '').split(';')[0] ?? '';
  // A HEAD answer has the GET's headers and no content to hold to a schema.
  if (type !== 'application/json' || method === 'HEAD') return;
  const base =
    documented?.$ref !== undefined
      ? documented.$ref.slice(1)
      : `/paths/${escape(template as string)}/${method.toLowerCase()}/responses/${reply.status}`;
  validate(`${base}/content/application~1json/schema`, reply.body);
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    const value = reply.headers.get(name);
    if (value !== null) expect(value).toMatch(/^\d+$/);
  }
}

/** Bearer authorization headers for `secret`. */
export function bearer(secret: string, more: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${secret}`, ...more };
}
