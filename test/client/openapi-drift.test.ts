import { describe, expect, it } from 'vitest';
import type {
  Account,
  BatchCreated,
  BatchRecord,
  BatchStatus,
  BatchWebhook,
  Client,
  CompactResult,
  DetailedResult,
  Filter,
  FilterDeleted,
  FilterPage,
  ShapeBResult,
} from '../../src/client.js';
import {
  BATCH_FIELDS,
  FILTER_FIELDS,
  FILTER_PARAMETERS,
  VERIFY_PARAMETERS,
} from '../../src/client/requests.js';
import { OPENAPI_DOCUMENT } from '../../src/http.js';

/**
 * The client's types and the OpenAPI document cannot drift apart. Each type's fields are
 * listed below with `satisfies Fields<T>`, which TypeScript checks both ways (a field of the
 * type missing from the list, or listed but not in the type, or required in one and optional
 * in the other, fails `npm run lint`); this test then compares each list with the schema the
 * document answers with, read at test time, so a field the server adds or drops fails here.
 * The request side is checked the same way: the tables the client builds its queries and
 * bodies from, against the document's parameters and request bodies.
 */
type Fields<T> = { readonly [K in keyof T]-?: object extends Pick<T, K> ? 'optional' : 'required' };
type Presence = Readonly<Record<string, 'optional' | 'required'>>;

/** `raw`: answered as bytes the client does not parse (downloadResults streams them). */
type Spec = Presence | 'error_envelope' | 'raw';

/** The client's side of every object schema the API answers with, by schema name. */
const CLIENT_TYPES: Readonly<Record<string, Spec>> = {
  CompactResult: {
    email: 'required',
    state: 'required',
    score: 'required',
    reason: 'required',
  } satisfies Fields<CompactResult>,
  DetailedResult: {
    email: 'required',
    state: 'required',
    score: 'required',
    reason: 'required',
    domain: 'required',
    user: 'required',
    mx_record: 'required',
    smtp_provider: 'required',
    disposable: 'required',
    role: 'required',
    free: 'required',
    catch_all: 'required',
    mailbox_full: 'required',
    no_reply: 'required',
    did_you_mean: 'required',
    duration: 'required',
  } satisfies Fields<DetailedResult>,
  SelectedResult: {
    email: 'required',
    state: 'optional',
    score: 'optional',
    reason: 'optional',
    domain: 'optional',
    user: 'optional',
    mx_record: 'optional',
    smtp_provider: 'optional',
    disposable: 'optional',
    role: 'optional',
    free: 'optional',
    catch_all: 'optional',
    mailbox_full: 'optional',
    no_reply: 'optional',
    did_you_mean: 'optional',
    duration: 'optional',
  } satisfies Fields<Partial<DetailedResult> & Pick<DetailedResult, 'email'>>,
  ShapeBResult: {
    email: 'required',
    status: 'required',
    score: 'required',
    deliverability: 'required',
    disposable: 'required',
    role: 'required',
    free: 'required',
    catch_all: 'required',
    risk_factors: 'required',
    site_source: 'optional',
    did_you_mean: 'required',
    duration: 'required',
  } satisfies Fields<ShapeBResult>,
  BatchSubmitted: {
    id: 'required',
    status: 'required',
    total_emails: 'required',
    message: 'required',
  } satisfies Fields<BatchCreated>,
  BatchStatus: {
    id: 'required',
    status: 'required',
    total_emails: 'required',
    processed: 'required',
    percent_complete: 'required',
    valid: 'required',
    invalid: 'required',
    risky: 'required',
    download_url: 'optional',
    reason: 'optional',
    webhook: 'optional',
  } satisfies Fields<BatchStatus>,
  'BatchStatus.webhook': {
    status: 'required',
    attempts: 'required',
    last_status: 'required',
    last_error: 'required',
    next_attempt_at: 'required',
  } satisfies Fields<BatchWebhook>,
  BatchResults: 'raw',
  BatchRecord: {
    input: 'required',
    email: 'required',
    state: 'required',
    score: 'required',
    reason: 'required',
    domain: 'required',
    user: 'required',
    mx_record: 'required',
    smtp_provider: 'required',
    disposable: 'required',
    role: 'required',
    free: 'required',
    catch_all: 'required',
    mailbox_full: 'required',
    no_reply: 'required',
    did_you_mean: 'required',
    duration: 'required',
    risk_factors: 'required',
    error: 'required',
    duplicate: 'optional',
  } satisfies Fields<BatchRecord>,
  'BatchRecord.error': {
    code: 'required',
    message: 'required',
  } satisfies Fields<NonNullable<BatchRecord['error']>>,
  Filter: {
    id: 'required',
    filter_type: 'required',
    value: 'required',
    action: 'required',
    reason: 'required',
    created_at: 'required',
  } satisfies Fields<Filter>,
  FilterList: {
    filters: 'required',
    total: 'required',
    page: 'required',
    per_page: 'required',
  } satisfies Fields<FilterPage>,
  Deleted: { id: 'required', deleted: 'required' } satisfies Fields<FilterDeleted>,
  Account: {
    email: 'required',
    plan: 'required',
    credits: 'required',
    rate_limit: 'required',
    billing_period: 'required',
  } satisfies Fields<Account>,
  'Account.credits': {
    available: 'required',
    reserved: 'required',
    used: 'required',
    total: 'required',
  } satisfies Fields<Account['credits']>,
  'Account.rate_limit': {
    per_minute: 'required',
    remaining: 'required',
  } satisfies Fields<Account['rate_limit']>,
  'Account.billing_period': {
    start: 'required',
    end: 'required',
  } satisfies Fields<Account['billing_period']>,
  Error: 'error_envelope',
  RateLimitError: 'error_envelope',
  InsufficientCreditsError: 'error_envelope',
  BatchNotCompletedError: 'error_envelope',
};

/** Which client call serves each operation of the document (HEAD and OPTIONS aside). */
const CLIENT_CALLS: Readonly<Record<string, string | null>> = {
  verify: 'verify',
  submitBatch: 'submitBatch',
  batchStatus: 'batch',
  batchResults: 'batchResults',
  redeliverWebhook: 'redeliverWebhook',
  listFilters: 'filters.list',
  createFilter: 'filters.create',
  deleteFilter: 'filters.delete',
  account: 'account',
  // The document itself: nothing a client of the API calls.
  openapi: null,
};

interface Schema {
  readonly $ref?: string;
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly required?: readonly string[];
  readonly items?: Schema;
  readonly anyOf?: readonly Schema[];
  readonly oneOf?: readonly Schema[];
}
interface Operation {
  readonly operationId: string;
  readonly parameters?: readonly { $ref?: string; name?: string; in?: string }[];
  readonly requestBody?: { content: Record<string, { schema: Schema }> };
  readonly responses: Readonly<
    Record<string, { $ref?: string; content?: Record<string, { schema: Schema }> }>
  >;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document read as data
const doc = OPENAPI_DOCUMENT as any;

function resolve<T>(ref: string): T {
  return ref
    .replace(/^#\//, '')
    .split('/')
    .reduce((node, key) => node[key], doc) as T;
}

function operations(): Operation[] {
  const found: Operation[] = [];
  for (const item of Object.values(doc.paths) as Record<string, Operation>[]) {
    for (const [method, operation] of Object.entries(item)) {
      if (['get', 'post', 'put', 'patch', 'delete'].includes(method)) found.push(operation);
    }
  }
  return found;
}

/** Every object schema with properties that an answer of the document can carry, by name. */
function answeredObjects(): Map<string, Schema> {
  const found = new Map<string, Schema>();
  const visit = (schema: Schema, name: string) => {
    if (schema.$ref !== undefined) {
      return visit(resolve<Schema>(schema.$ref), schema.$ref.split('/').at(-1) as string);
    }
    for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) visit(branch, name);
    if (schema.items !== undefined) visit(schema.items, name);
    if (schema.properties === undefined || found.has(name)) return;
    found.set(name, schema);
    for (const [field, property] of Object.entries(schema.properties)) {
      if (property.$ref === undefined) visit(property, `${name}.${field}`);
      else visit(property, property.$ref.split('/').at(-1) as string);
    }
  };
  for (const operation of operations()) {
    for (const answer of Object.values(operation.responses)) {
      const resolved = answer.$ref === undefined ? answer : resolve<typeof answer>(answer.$ref);
      for (const media of Object.values(resolved.content ?? {})) visit(media.schema, '(inline)');
    }
  }
  return found;
}

function presenceOf(schema: Schema): Presence {
  return Object.fromEntries(
    Object.keys(schema.properties ?? {}).map((field) => [
      field,
      schema.required?.includes(field) === true ? 'required' : 'optional',
    ]),
  );
}

function operation(id: string): Operation {
  const found = operations().find((o) => o.operationId === id);
  if (found === undefined) throw new Error(`no operation ${id} in the document`);
  return found;
}

function parameters(id: string, where: string): string[] {
  return (operation(id).parameters ?? [])
    .map((p) => (p.$ref === undefined ? p : resolve<{ name: string; in: string }>(p.$ref)))
    .filter((p) => p.in === where)
    .map((p) => p.name as string);
}

function bodyFields(id: string): string[] {
  const schema = Object.values(operation(id).requestBody?.content ?? {})[0]?.schema ?? {};
  const resolved = schema.$ref === undefined ? schema : resolve<Schema>(schema.$ref);
  return Object.keys(resolved.properties ?? {});
}

describe('the client against the OpenAPI document', () => {
  it('has a type for every object the API answers with, field for field, and no stale one', () => {
    const answered = answeredObjects();
    for (const [name, schema] of answered) {
      const spec = CLIENT_TYPES[name];
      expect(spec, `${name} is answered by the API: give it a client type`).toBeDefined();
      if (spec === 'raw') continue;
      if (spec === 'error_envelope') {
        // ApiError reads these two; the rest of an envelope is its `details`.
        expect(schema.required, name).toEqual(expect.arrayContaining(['error', 'message']));
        continue;
      }
      expect(spec, `${name}: the client type's fields against the document's`).toEqual(
        presenceOf(schema),
      );
    }
    expect(Object.keys(CLIENT_TYPES).filter((name) => !answered.has(name))).toEqual([]);
  });

  it('has a call for every operation', () => {
    const ids = operations().map((o) => o.operationId);
    expect(ids.filter((id) => !(id in CLIENT_CALLS))).toEqual([]);
    expect(Object.keys(CLIENT_CALLS).filter((id) => !ids.includes(id))).toEqual([]);
    const calls: (keyof Client | `filters.${keyof Client['filters']}`)[] = [
      'verify',
      'submitBatch',
      'batch',
      'batchResults',
      'redeliverWebhook',
      'filters.list',
      'filters.create',
      'filters.delete',
      'account',
    ];
    expect(
      Object.values(CLIENT_CALLS)
        .filter((call) => call !== null)
        .sort(),
    ).toEqual([...calls].sort());
  });

  it('sends the query parameters, headers and body fields the document names', () => {
    // api_key is the query spelling of the key, which the client sends as a bearer header.
    const query = (id: string) => parameters(id, 'query').filter((name) => name !== 'api_key');
    expect(query('verify').sort()).toEqual(['email', ...Object.values(VERIFY_PARAMETERS)].sort());
    expect(query('listFilters').sort()).toEqual(Object.values(FILTER_PARAMETERS).sort());
    expect(query('batchResults')).toEqual(['format']);
    expect(parameters('verify', 'header')).toEqual(['Idempotency-Key']);
    expect(parameters('submitBatch', 'header')).toEqual(['Idempotency-Key']);
    expect(bodyFields('submitBatch').sort()).toEqual(Object.values(BATCH_FIELDS).sort());
    expect(bodyFields('createFilter').sort()).toEqual(Object.values(FILTER_FIELDS).sort());
  });
});
