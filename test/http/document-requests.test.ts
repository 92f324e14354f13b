import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAPI_DOCUMENT } from '../../src/http/openapi.js';
import { apiFixture, type ApiFixture } from '../helpers/service.js';
import { bearer, directClient, requestViolations, type CallInit, type Client } from './helpers.js';

/**
 * Requests at the limits the OpenAPI document states, each limit read from the document: at
 * the limit the document allows the request and the server takes it (no 400); one past it the
 * document forbids it and the server refuses it with a 400 naming the field. The document is
 * built from the code's constants and the server checks by them, so when one changes without
 * the other, a case here fails.
 */
describe('the OpenAPI document and the server agree on requests', () => {
  let api: ApiFixture;
  let client: Client;
  let secret: string;
  /** An account with no credits: a request that passed every check answers 402, storing nothing. */
  let poor: string;

  beforeAll(async () => {
    api = await apiFixture();
    client = await directClient(api.service);
    ({ secret } = await api.account());
    ({ secret: poor } = await api.account({ credits: 0 }));
  });
  afterAll(async () => {
    await client.close();
  });

  type Schema = Record<string, unknown>;
  const schemas = OPENAPI_DOCUMENT.components.schemas as unknown as Record<string, Schema>;
  const property = (schema: string, name: string) =>
    (schemas[schema]?.properties as Record<string, Schema>)[name] as Schema;
  const enumOf = (schema: string) => schemas[schema]?.enum as string[];
  /** A query parameter's schema as the document gives it for an operation. */
  function parameter(path: string, method: string, name: string): Schema {
    const paths = OPENAPI_DOCUMENT.paths as Record<
      string,
      Record<string, { parameters: Schema[] }>
    >;
    const found = paths[path]?.[method]?.parameters.find((p) => p.name === name);
    expect(found, `${method} ${path} ${name}`).toBeDefined();
    return found?.schema as Schema;
  }
  const number = (schema: Schema, key: string) => schema[key] as number;

  /** Sends a request, with what the document says of it. */
  async function send(path: string, init: CallInit = {}) {
    const violations = requestViolations(init.method ?? 'GET', path, init);
    return { reply: await client.call(path, init), violations };
  }

  async function expectTaken(path: string, init: CallInit = {}) {
    const { reply, violations } = await send(path, init);
    expect(violations, path.slice(0, 120)).toEqual([]);
    expect(reply.status, `${path.slice(0, 120)}: ${reply.text}`).not.toBe(400);
    expect(reply.status).toBeLessThan(500);
    return reply;
  }

  async function expectRefused(field: string, path: string, init: CallInit = {}) {
    const { reply, violations } = await send(path, init);
    expect(violations?.length, `the document allows ${path.slice(0, 120)}`).toBeGreaterThan(0);
    expect(reply.status, `${path.slice(0, 120)}: ${reply.text}`).toBe(400);
    expect(reply.body).toMatchObject({ error: 'invalid_request', field });
  }

  const posted = (key: string, body: unknown, more: Record<string, string> = {}): CallInit => ({
    method: 'POST',
    headers: bearer(key, { 'content-type': 'application/json', ...more }),
    body: JSON.stringify(body),
  });

  describe('query parameters', () => {
    it('per_page and page: the maximum is taken, one more refused', async () => {
      const perPage = number(parameter('/v1/filters', 'get', 'per_page'), 'maximum');
      const page = number(parameter('/v1/filters', 'get', 'page'), 'maximum');
      const headers = bearer(secret);
      await expectTaken(`/v1/filters?per_page=${perPage}`, { headers });
      await expectRefused('per_page', `/v1/filters?per_page=${perPage + 1}`, { headers });
      await expectRefused('per_page', '/v1/filters?per_page=0', { headers });
      await expectTaken(`/v1/filters?page=${page}`, { headers });
      await expectRefused('page', `/v1/filters?page=${page + 1}`, { headers });
      await expectRefused('page', '/v1/filters?page=two', { headers });
    });

    it('each enum member is taken, anything else refused', async () => {
      // A test address: every method answers it, smtp too on this offline engine.
      const headers = bearer(poor);
      for (const method of enumOf('Method')) {
        await expectTaken(`/v1/verify?email=risky@example.com&method=${method}`, { headers });
      }
      await expectRefused('method', '/v1/verify?email=a@example.org&method=deep', { headers });
      for (const type of enumOf('FilterType')) {
        await expectTaken(`/v1/filters?filter_type=${type}`, { headers: bearer(secret) });
      }
      await expectRefused('filter_type', '/v1/filters?filter_type=host', {
        headers: bearer(secret),
      });
      const formats = parameter('/v1/verify/{id}/results', 'get', 'format').enum as string[];
      for (const format of formats) {
        // Every format passes its check: the job is unknown.
        const { reply } = await send(`/v1/verify/batch_none/results?format=${format}`, {
          headers: bearer(secret),
        });
        expect(reply.status).toBe(404);
      }
      await expectRefused('format', '/v1/verify/batch_none/results?format=xml', {
        headers: bearer(secret),
      });
    });

    it('site_source: the longest is taken, one character more refused', async () => {
      const max = number(parameter('/v1/verify', 'get', 'site_source'), 'maxLength');
      const headers = bearer(secret);
      const path = '/v1/verify?email=deliverable@example.com&smtp=false&site_source=';
      await expectTaken(`${path}${'s'.repeat(max)}`, { headers });
      await expectRefused('site_source', `${path}${'s'.repeat(max + 1)}`, { headers });
      await expectRefused('site_source', `${path}a%0Ab`, { headers });
    });

    it('email: any string is taken, a missing or empty one refused', async () => {
      const schema = parameter('/v1/verify', 'get', 'email');
      expect(schema.maxLength).toBeUndefined();
      const headers = bearer(poor);
      await expectTaken(`/v1/verify?email=${'a'.repeat(2000)}@example.org`, { headers });
      await expectTaken(`/v1/verify?email=${encodeURIComponent('a\u0001b')}`, { headers });
      await expectRefused('email', '/v1/verify?email=', { headers });
      await expectRefused('email', '/v1/verify?method=quick', { headers });
    });

    it('fields: every detailed field is taken, an unknown one refused', async () => {
      const names = schemas.DetailedResult?.required as string[];
      const headers = bearer(secret);
      await expectTaken(`/v1/verify?email=risky@example.com&fields=${names.join(',')}`, {
        headers,
      });
      await expectTaken('/v1/verify?email=risky@example.com&fields= state , domain', { headers });
      await expectRefused('fields', '/v1/verify?email=risky@example.com&fields=state,colour', {
        headers,
      });
    });

    it('an unknown or repeated parameter is refused', async () => {
      const headers = bearer(secret);
      await expectRefused('colour', '/v1/account?colour=red', { headers });
      await expectRefused('page', '/v1/filters?page=1&page=2', { headers });
    });

    it('Idempotency-Key: the longest is taken, one character more refused', async () => {
      const header = (OPENAPI_DOCUMENT.components.parameters as Record<string, { schema: Schema }>)[
        'Idempotency-Key'
      ]?.schema as Schema;
      const max = number(header, 'maxLength');
      const path = '/v1/verify?email=deliverable@example.com';
      await expectTaken(path, { headers: bearer(secret, { 'idempotency-key': 'k'.repeat(max) }) });
      await expectRefused('idempotency-key', path, {
        headers: bearer(secret, { 'idempotency-key': 'k'.repeat(max + 1) }),
      });
    });

    it('a path id: the longest is looked up, one character more refused', async () => {
      const pattern = (OPENAPI_DOCUMENT.components.parameters as Record<string, { schema: Schema }>)
        .id?.schema.pattern as string;
      const max = Number(/\{1,(\d+)\}/.exec(pattern)?.[1]);
      expect(max).toBeGreaterThan(0);
      const headers = bearer(secret);
      const { reply, violations } = await send(`/v1/verify/${'b'.repeat(max)}`, { headers });
      expect(violations).toEqual([]);
      expect(reply.status).toBe(404);
      await expectRefused('id', `/v1/verify/${'b'.repeat(max + 1)}`, { headers });
      await expectRefused('id', '/v1/filters/a.b', { headers: bearer(secret), method: 'DELETE' });
    });
  });

  describe('POST /v1/verify (BatchRequest)', () => {
    it('emails: the most addresses are taken, one more refused', async () => {
      const max = number(property('BatchRequest', 'emails'), 'maxItems');
      const emails = Array.from({ length: max }, (_, i) => `u${i}@example.org`);
      const taken = await expectTaken('/v1/verify', posted(poor, { emails }));
      expect(taken.status).toBe(402);
      await expectRefused('emails', '/v1/verify', posted(poor, { emails: [...emails, 'x@y.org'] }));
      await expectRefused('emails', '/v1/verify', posted(poor, { emails: [] }));
    });

    it('emails: the longest address is taken, one character more refused', async () => {
      const items = property('BatchRequest', 'emails').items as Schema;
      const max = number(items, 'maxLength');
      const long = (length: number) => `${'a'.repeat(length - 12)}@example.org`;
      await expectTaken('/v1/verify', posted(poor, { emails: [long(max)] }));
      await expectRefused('emails', '/v1/verify', posted(poor, { emails: [long(max + 1)] }));
      await expectRefused('emails', '/v1/verify', posted(poor, { emails: ['a\u0085b@x.org'] }));
      await expectRefused('emails', '/v1/verify', posted(poor, { emails: ['a@x.org', 7] }));
    });

    it('method and callback_url: as documented', async () => {
      for (const method of enumOf('Method')) {
        const emails = ['risky@example.com'];
        expect((await expectTaken('/v1/verify', posted(poor, { emails, method }))).status).toBe(
          202,
        );
      }
      await expectRefused(
        'method',
        '/v1/verify',
        posted(poor, { emails: ['a@x.org'], method: 'x' }),
      );
      const max = number(property('BatchRequest', 'callback_url'), 'maxLength');
      const url = (length: number) => `https://hooks.example.org/${'p'.repeat(length - 26)}`;
      expect(url(max)).toHaveLength(max);
      await expectTaken(
        '/v1/verify',
        posted(poor, { emails: ['a@example.org'], callback_url: url(max) }),
      );
      await expectTaken(
        '/v1/verify',
        posted(poor, { emails: ['a@example.org'], callback_url: null }),
      );
      await expectRefused(
        'callback_url',
        '/v1/verify',
        posted(poor, { emails: ['a@example.org'], callback_url: url(max + 1) }),
      );
      await expectRefused(
        'callback_url',
        '/v1/verify',
        posted(poor, { emails: ['a@example.org'], callback_url: 5 }),
      );
    });

    it('an unknown field is refused', async () => {
      await expectRefused('colour', '/v1/verify', posted(poor, { emails: ['a@x.org'], colour: 1 }));
    });
  });

  describe('POST /v1/filters (NewFilter)', () => {
    it('reason: the longest is taken, one character more refused', async () => {
      const max = number(property('NewFilter', 'reason'), 'maxLength');
      const filter = (value: string, reason: string) =>
        posted(secret, { value, filter_type: 'domain', action: 'block', reason });
      await expectTaken('/v1/filters', filter('r1.example', 'r'.repeat(max)));
      await expectRefused('reason', '/v1/filters', filter('r2.example', 'r'.repeat(max + 1)));
      await expectRefused('reason', '/v1/filters', filter('r3.example', 'a\u0007b'));
    });

    it('value: one character past the longest is refused', async () => {
      const max = number(property('NewFilter', 'value'), 'maxLength');
      await expectRefused(
        'value',
        '/v1/filters',
        posted(secret, { value: 'v'.repeat(max + 1), filter_type: 'domain', action: 'block' }),
      );
    });

    it('each filter type and action is taken, anything else refused', async () => {
      const values: Record<string, readonly string[]> = {
        email: ['someone@t.example', 'other@t.example'],
        domain: ['t.example', 'u.example'],
        ip_address: ['192.0.2.0/24', '198.51.100.7'],
      };
      for (const filter_type of enumOf('FilterType')) {
        for (const [index, action] of enumOf('FilterAction').entries()) {
          const body = { value: values[filter_type]?.[index], filter_type, action };
          expect((await expectTaken('/v1/filters', posted(secret, body))).status).toBe(201);
        }
      }
      const body = { value: 't.example', filter_type: 'host', action: 'block' };
      await expectRefused('filter_type', '/v1/filters', posted(secret, body));
      const action = { value: 't.example', filter_type: 'domain', action: 'drop' };
      await expectRefused('action', '/v1/filters', posted(secret, action));
    });
  });
});
