import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'vitest';
import { createEngine, type EngineOptions } from '../../src/engine/engine.js';
import { withRemoteAddress } from '../../src/http/client-ip.js';
import { createHandler, type HandlerOptions } from '../../src/http/handler.js';
import { serve, type RunningServer } from '../../src/http/node-server.js';
import { OPENAPI_DOCUMENT } from '../../src/http/openapi.js';
import type { Store } from '../../src/ports/store.js';
import { createService, type NewAccount, type Service } from '../../src/service/service.js';
import { createMemoryStore } from '../../src/store/memory-store.js';

/** A service on `store` with helpers to make accounts and keys. */
export interface ApiFixture {
  readonly service: Service;
  readonly store: Store;
  account(input?: Partial<NewAccount>): Promise<{ accountId: string; secret: string }>;
  publicKey(accountId: string, trustedDomains: readonly string[]): Promise<string>;
}

export async function apiFixture(
  store: Store = createMemoryStore(),
  engine: EngineOptions = { offline: true },
): Promise<ApiFixture> {
  const service = createService({ engine: createEngine(engine), store });
  let accounts = 0;
  return {
    service,
    store,
    async account(input = {}) {
      const account = await service.admin.createAccount({
        email: `ops${accounts++}@example.org`,
        plan: 'enterprise',
        credits: 1000,
        ...input,
      });
      const { secret } = await service.admin.createKey(account.id);
      return { accountId: account.id, secret };
    },
    async publicKey(accountId, trustedDomains) {
      const { secret } = await service.admin.createKey(accountId, {
        kind: 'public',
        trustedDomains,
      });
      return secret;
    },
  };
}

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
  return result;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(OPENAPI_DOCUMENT as object, 'openapi.json');

const TEMPLATES: readonly [RegExp, string][] = [
  [/^\/v1\/verify$/, '/v1/verify'],
  [/^\/v1\/verify\/[^/]+$/, '/v1/verify/{id}'],
  [/^\/v1\/verify\/[^/]+\/results$/, '/v1/verify/{id}/results'],
  [/^\/v1\/filters$/, '/v1/filters'],
  [/^\/v1\/filters\/[^/]+$/, '/v1/filters/{id}'],
  [/^\/v1\/account$/, '/v1/account'],
  [/^\/v1\/openapi\.json$/, '/v1/openapi.json'],
];

const escape = (part: string) => part.replace(/~/g, '~0').replace(/\//g, '~1');
const validators = new Map<string, ReturnType<typeof ajv.compile>>();

function validate(pointer: string, value: unknown): void {
  let check = validators.get(pointer);
  if (check === undefined) {
    check = ajv.compile({ $ref: `openapi.json#${pointer}` });
    validators.set(pointer, check);
  }
  if (!check(value)) {
    throw new Error(
      `Response does not match ${pointer}: ${ajv.errorsText(check.errors)}\n${JSON.stringify(value)}`,
    );
  }
}

/**
 * Every answer a test gets is checked against the OpenAPI document: its status must be
 * listed for the route and method, and a JSON body must match that status's schema.
 * Unknown routes and methods must answer the envelope.
 */
export function expectDocumented(method: string, path: string, reply: Reply): void {
  const pathname = path.split('?')[0] ?? '';
  const template = TEMPLATES.find(([pattern]) => pattern.test(pathname))?.[1];
  const doc = OPENAPI_DOCUMENT as unknown as {
    paths: Record<string, Record<string, { responses: Record<string, { $ref?: string }> }>>;
  };
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
  if (type !== 'application/json') return;
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
