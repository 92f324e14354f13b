import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAPI_DOCUMENT } from '../../src/http/openapi.js';
import { withRemoteAddress } from '../../src/http/client-ip.js';
import { createHandler } from '../../src/http/handler.js';
import { apiFixture, type ApiFixture } from '../helpers/service.js';
import { bearer, DIRECT_IP, directClient, type Client } from './helpers.js';

/**
 * The /v1 API's HTTP semantics as a hostile caller and a careful consumer meet them: the
 * Idempotency-Key header, HEAD, the Authorization scheme, Accept negotiation, JSON bodies and
 * the requests the OpenAPI document allows. Each case here was a defect (an answer that was
 * false, off the error envelope or the OpenAPI document, or a bad input that changed stored
 * data) before its fix.
 */
describe('/v1 API protocol', () => {
  let api: ApiFixture;
  let client: Client;
  let secret: string;
  let accountId: string;

  beforeAll(async () => {
    api = await apiFixture();
    client = await directClient(api.service);
    ({ secret, accountId } = await api.account());
  });
  afterAll(async () => {
    await client.close();
  });

  async function snapshot(id = accountId) {
    const [filters, account, ledger] = await Promise.all([
      api.service.listFilters({ accountId: id }, { perPage: 100 }),
      api.service.admin.getAccount(id),
      api.service.admin.ledger(id),
    ]);
    return { filters, credits: account.credits, ledger };
  }

  /** A raw call to the handler, for methods the documented client cannot check (HEAD). */
  async function raw(path: string, init: RequestInit = {}): Promise<Response> {
    const handler = createHandler(api.service, { onError: () => undefined });
    const request = new Request(`http://mv.test${path}`, init);
    return handler(withRemoteAddress(request, DIRECT_IP));
  }

  describe('Idempotency-Key (bound to method, address and shape)', () => {
    it.each([
      ['detailed=true', '&detailed=true'],
      ['fields', '&fields=state,domain'],
      ['form B', '&smtp=false'],
      ['another site_source', '&smtp=false&site_source=other'],
    ])('refuses the key reused with another shape (%s) with 409', async (_name, shape) => {
      const key = `shape-${_name}`;
      const base =
        _name === 'another site_source'
          ? '/v1/verify?email=grace@example.org&smtp=false&site_source=signup'
          : '/v1/verify?email=grace@example.org';
      const headers = bearer(secret, { 'idempotency-key': key });
      const first = await client.call(base, { headers });
      expect(first.status).toBe(200);
      const before = await snapshot();
      const other = await client.call(`/v1/verify?email=grace@example.org${shape}`, { headers });
      expect(other.status).toBe(409);
      expect(other.body).toMatchObject({
        error: 'idempotency_conflict',
        field: 'idempotency-key',
      });
      expect(await snapshot()).toEqual(before);
      // The same request again is still the first answer.
      const again = await client.call(base, { headers });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
    });

    it('treats detailed=false as the compact shape it is', async () => {
      const headers = bearer(secret, { 'idempotency-key': 'compact-same' });
      const first = await client.call('/v1/verify?email=heidi@example.org', { headers });
      const again = await client.call('/v1/verify?email=heidi@example.org&detailed=false', {
        headers,
      });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
    });

    it.each([
      ['empty', ''],
      ['longer than 255 characters', 'k'.repeat(256)],
    ])('refuses an %s key naming the header, before counting the request', async (_n, key) => {
      const before = await snapshot();
      const counted = await client.call('/v1/account', { headers: bearer(secret) });
      const reply = await client.call('/v1/verify?email=ivan@example.org', {
        headers: bearer(secret, { 'idempotency-key': key }),
      });
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ error: 'invalid_request', field: 'idempotency-key' });
      // The key is known, so its figures are on the refusal; the request was not counted.
      expect(reply.headers.get('x-ratelimit-limit')).toBe('300');
      const remaining = counted.headers.get('x-ratelimit-remaining');
      expect(reply.headers.get('x-ratelimit-remaining')).toBe(remaining);
      expect(await snapshot()).toEqual(before);
    });

    it('answers a second request while the first runs 409 request_in_progress', async () => {
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const slow = await apiFixture(undefined, {
        dns: { mx: () => gate.then(() => ({ kind: 'nxdomain' }) as const) },
      });
      const own = await slow.account();
      const slowClient = await directClient(slow.service);
      const headers = bearer(own.secret, { 'idempotency-key': 'running' });
      const first = slowClient.call('/v1/verify?email=oscar@example.org', { headers });
      // The first has claimed the key once its record is in the store.
      for (let turn = 0; turn < 1000; turn++) {
        if (
          (await slow.store.idempotencyRecord(own.accountId, 'running', Date.now())) !== undefined
        )
          break;
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      const second = await slowClient.call('/v1/verify?email=oscar@example.org', { headers });
      release();
      expect((await first).status).toBe(200);
      expect(second.status).toBe(409);
      expect(second.body).toMatchObject({
        error: 'request_in_progress',
        field: 'idempotency-key',
      });
      expect(second.headers.get('x-ratelimit-limit')).toBe('300');
    });

    it('names the header when a batch reuses a key', async () => {
      const headers = bearer(secret, {
        'content-type': 'application/json',
        'idempotency-key': 'batch-audit',
      });
      const first = await client.call('/v1/verify', {
        method: 'POST',
        headers,
        body: JSON.stringify({ emails: ['judy@example.org'] }),
      });
      expect(first.status).toBe(202);
      const other = await client.call('/v1/verify', {
        method: 'POST',
        headers,
        body: JSON.stringify({ emails: ['mallory@example.org'] }),
      });
      expect(other.status).toBe(409);
      expect(other.body).toMatchObject({
        error: 'idempotency_conflict',
        field: 'idempotency-key',
      });
    });
  });

  describe('HEAD (RFC 9110 9.3.2: GET without the content)', () => {
    it.each([
      '/v1/account',
      '/v1/filters',
      '/v1/openapi.json',
      '/v1/verify?email=risky@example.com',
    ])('answers HEAD %s as GET, with no body', async (path) => {
      const get = await raw(path, { headers: bearer(secret) });
      const head = await raw(path, { method: 'HEAD', headers: bearer(secret) });
      expect(head.status).toBe(get.status);
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
      expect(head.headers.get('x-ratelimit-limit')).toBe(get.headers.get('x-ratelimit-limit'));
      expect(await head.text()).toBe('');
    });

    it('answers HEAD of a job and its results as GET, refusals included', async () => {
      const status = await raw('/v1/verify/batch_missing', {
        method: 'HEAD',
        headers: bearer(secret),
      });
      expect(status.status).toBe(404);
      expect(status.headers.get('x-ratelimit-limit')).toBe('300');
      expect(await status.text()).toBe('');
      const results = await raw('/v1/verify/batch_missing/results', {
        method: 'HEAD',
        headers: bearer(secret),
      });
      expect(results.status).toBe(404);
    });

    it('lists HEAD in Allow wherever GET is, and nowhere else', async () => {
      for (const [path, allow] of [
        ['/v1/account', 'GET, HEAD, OPTIONS'],
        ['/v1/verify', 'GET, HEAD, POST, OPTIONS'],
        ['/v1/filters/flt_1', 'DELETE, OPTIONS'],
      ] as const) {
        const reply = await raw(path, { method: 'OPTIONS' });
        expect(reply.headers.get('allow')).toBe(allow);
      }
      // A page's OPTIONS (a CORS preflight or not) is told the same methods.
      for (const requested of ['GET', 'POST']) {
        const preflight = await raw('/v1/verify', {
          method: 'OPTIONS',
          headers: {
            origin: 'https://app.example.org',
            'access-control-request-method': requested,
          },
        });
        expect(preflight.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
      }
      const refused = await raw('/v1/filters/flt_1', { method: 'HEAD', headers: bearer(secret) });
      expect(refused.status).toBe(405);
      expect(refused.headers.get('allow')).toBe('DELETE, OPTIONS');
    });
  });

  describe('401', () => {
    it.each([
      ['no key', {}],
      ['an empty bearer', { authorization: 'Bearer ' }],
      ['Basic auth', { authorization: 'Basic Zm9vOmJhcg==' }],
      ['an unknown key', { authorization: `Bearer mv_sk_${'x'.repeat(32)}` }],
    ])('challenges %s with WWW-Authenticate: Bearer (RFC 9110 11.6.1)', async (_n, headers) => {
      const reply = await client.call('/v1/account', { headers });
      expect(reply.status).toBe(401);
      expect(reply.body.error).toBe('unauthorized');
      expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer realm="mailverdict"/);
    });

    it('accepts the scheme in any case (RFC 9110 11.1) and a key with trailing blanks', async () => {
      for (const authorization of [`bearer ${secret}`, `BEARER ${secret}`, `Bearer ${secret}  `]) {
        const reply = await client.call('/v1/account', { headers: { authorization } });
        expect(reply.status).toBe(200);
      }
    });
  });

  describe('batch results: Accept negotiation', () => {
    let id: string;
    beforeAll(async () => {
      const submitted = await client.call('/v1/verify', {
        method: 'POST',
        headers: bearer(secret, { 'content-type': 'application/json' }),
        body: JSON.stringify({ emails: ['a@example.org', 'b@example.org'] }),
      });
      id = submitted.body.id;
      await api.service.batchWork.idle();
    });

    it.each([
      ['text/csv', 'text/csv'],
      ['application/x-ndjson', 'application/x-ndjson'],
      ['application/ndjson', 'application/x-ndjson'],
      ['application/json', 'application/json'],
      ['*/*', 'application/json'],
      ['application/json, text/csv;q=0', 'application/json'],
      ['text/csv;q=0.1, application/json', 'application/json'],
      ['application/json;q=0.5, text/csv', 'text/csv'],
      ['application/x-ndjson;q=0.9, text/csv;q=0.8', 'application/x-ndjson'],
      ['text/*', 'text/csv'],
      ['text/csv;q=0, */*', 'application/json'],
      ['application/xml', 'application/json'],
    ])('Accept: %s answers %s', async (accept, type) => {
      const reply = await client.call(`/v1/verify/${id}/results`, {
        headers: bearer(secret, { accept }),
      });
      expect(reply.status).toBe(200);
      expect(reply.headers.get('content-type')?.split(';')[0]).toBe(type);
    });

    it('lets format= win over Accept', async () => {
      const reply = await client.call(`/v1/verify/${id}/results?format=ndjson`, {
        headers: bearer(secret, { accept: 'text/csv' }),
      });
      expect(reply.headers.get('content-type')).toBe('application/x-ndjson');
    });
  });

  describe('JSON bodies', () => {
    it.each([
      [
        '/v1/filters',
        '{"value":"a.example","value":"b.example","filter_type":"domain","action":"block"}',
        'value',
      ],
      [
        '/v1/filters',
        '{"value":"a.example","filter_type":"domain","action":"allow","\\u0061ction":"block"}',
        'action',
      ],
      [
        '/v1/verify',
        '{"emails":["a@example.org"],"emails":["b@example.org","c@example.org"]}',
        'emails',
      ],
    ])(
      'refuses a duplicate member in a POST to %s, naming it and changing nothing',
      async (path, body, field) => {
        const before = await snapshot();
        const reply = await client.call(path, {
          method: 'POST',
          headers: bearer(secret, { 'content-type': 'application/json' }),
          body,
        });
        expect(reply.status).toBe(400);
        expect(reply.body).toMatchObject({ error: 'invalid_request', field });
        expect(await snapshot()).toEqual(before);
      },
    );

    it.each(['gzip', 'br', 'deflate, identity'])(
      'refuses a body in Content-Encoding: %s with 415 naming the header',
      async (coding) => {
        const before = await snapshot();
        const reply = await client.call('/v1/filters', {
          method: 'POST',
          headers: bearer(secret, {
            'content-type': 'application/json',
            'content-encoding': coding,
          }),
          body: new Uint8Array([0x1f, 0x8b, 0x08, 0x00]),
        });
        expect(reply.status).toBe(415);
        expect(reply.body).toMatchObject({
          error: 'unsupported_media_type',
          field: 'content-encoding',
        });
        expect(await snapshot()).toEqual(before);
      },
    );

    it('takes a body with a UTF-8 BOM', async () => {
      const reply = await client.call('/v1/filters', {
        method: 'POST',
        headers: bearer(secret, { 'content-type': 'application/json; charset=UTF-8' }),
        body: '\ufeff{"value":"bom.example","filter_type":"domain","action":"block","reason":"r"}',
      });
      expect(reply.status).toBe(201);
      expect(reply.body.value).toBe('bom.example');
    });
  });

  describe('requests the OpenAPI document allows are the requests the API takes', () => {
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema(OPENAPI_DOCUMENT as object, 'openapi.json');
    const documented = (schema: string, body: unknown) =>
      ajv.validate({ $ref: `openapi.json#/components/schemas/${schema}` }, body);

    it.each([
      [
        'NewFilter',
        '/v1/filters',
        { value: 'r1.example', filter_type: 'domain', action: 'block', reason: null },
      ],
      [
        'NewFilter',
        '/v1/filters',
        { value: 'r2.example', filter_type: 'domain', action: 'block', reason: '' },
      ],
      ['NewFilter', '/v1/filters', { value: '', filter_type: 'domain', action: 'block' }],
      ['BatchRequest', '/v1/verify', { emails: [''] }],
      ['BatchRequest', '/v1/verify', { emails: ['x'.repeat(1025)] }],
    ] as const)('%s %j: taken exactly when documented', async (schema, path, body) => {
      const reply = await client.call(path, {
        method: 'POST',
        headers: bearer(secret, { 'content-type': 'application/json' }),
        body: JSON.stringify(body),
      });
      expect(reply.status < 300, `${reply.status} ${reply.text}`).toBe(documented(schema, body));
    });

    it.each([
      ['/v1/verify?email=', 'email'],
      ['/v1/filters?page=1000001', 'page'],
    ])('refuses %s, as the document says', async (path, field) => {
      const reply = await client.call(path, { headers: bearer(secret) });
      expect(reply.status).toBe(400);
      expect(reply.body.field).toBe(field);
      const operation = path.startsWith('/v1/verify') ? ['/v1/verify', 0] : ['/v1/filters', 1];
      const paths = OPENAPI_DOCUMENT.paths as Record<string, { get: { parameters: unknown[] } }>;
      const doc = paths[operation[0] as string]?.get.parameters[operation[1] as number] as {
        schema: object;
      };
      const value = path.endsWith('=') ? '' : 1000001;
      expect(ajv.validate(doc.schema, value)).toBe(false);
    });

    it('echoes a long unknown field name cut short', async () => {
      const name = 'n'.repeat(10_000);
      const reply = await client.call('/v1/filters', {
        method: 'POST',
        headers: bearer(secret, { 'content-type': 'application/json' }),
        body: JSON.stringify({ [name]: 1 }),
      });
      expect(reply.status).toBe(400);
      expect(reply.text.length).toBeLessThan(1000);
    });
  });
});
