import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError } from '../../src/service/service-error.js';
import type { Service } from '../../src/service/service.js';
import { apiFixture } from '../helpers/service.js';
import { bearer, directClient, type CallInit, type Client } from './helpers.js';

/**
 * One rule per request field (src/service/request-fields.ts): a bad value is refused with the
 * same field and the same message whether it came through HTTP or the library.
 */
describe('a bad request field reads the same over HTTP and in the library', () => {
  let service: Service;
  let client: Client;
  let secret: string;
  let caller: { accountId: string };
  let jobId: string;

  beforeAll(async () => {
    const api = await apiFixture();
    service = api.service;
    client = await directClient(service);
    const account = await api.account();
    secret = account.secret;
    caller = { accountId: account.accountId };
    ({ id: jobId } = await service.submitBatch(caller, { emails: ['risky@example.com'] }));
    await service.batchWork.idle();
  });
  afterAll(async () => {
    await client.close();
  });

  /** The envelope of the library's refusal. */
  async function library(work: (service: Service) => Promise<unknown>) {
    try {
      await work(service);
    } catch (error) {
      if (error instanceof ServiceError) return error.toJSON();
      throw error;
    }
    throw new Error('the library took it');
  }

  async function http(path: string, init: CallInit = {}) {
    const reply = await client.call(path, { ...init, headers: bearer(secret, init.headers) });
    expect(reply.status, reply.text).toBe(400);
    return reply.body as Record<string, unknown>;
  }

  const post = (body: unknown): CallInit => ({
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

  const cases: readonly [
    string,
    (service: Service) => Promise<unknown>,
    () => readonly [string, CallInit?],
  ][] = [
    [
      'emails: none',
      (s) => s.submitBatch(caller, { emails: [] }),
      () => ['/v1/verify', post({ emails: [] })],
    ],
    [
      'emails: not text',
      (s) => s.submitBatch(caller, { emails: ['a@example.org', 7] as never }),
      () => ['/v1/verify', post({ emails: ['a@example.org', 7] })],
    ],
    [
      'emails: a control character',
      (s) => s.submitBatch(caller, { emails: ['a\u0085b@example.org'] }),
      () => ['/v1/verify', post({ emails: ['a\u0085b@example.org'] })],
    ],
    [
      'method of a batch',
      (s) => s.submitBatch(caller, { emails: ['a@example.org'], method: 'deep' as never }),
      () => ['/v1/verify', post({ emails: ['a@example.org'], method: 'deep' })],
    ],
    [
      'method of a verify',
      (s) => s.verify(caller, 'a@example.org', { method: 'deep' as never }),
      () => ['/v1/verify?email=a@example.org&method=deep'],
    ],
    [
      'callback_url: not text',
      (s) => s.submitBatch(caller, { emails: ['a@example.org'], callbackUrl: 5 as never }),
      () => ['/v1/verify', post({ emails: ['a@example.org'], callback_url: 5 })],
    ],
    [
      'callback_url: not https',
      (s) => s.submitBatch(caller, { emails: ['a@example.org'], callbackUrl: 'ftp://x.example/' }),
      () => ['/v1/verify', post({ emails: ['a@example.org'], callback_url: 'ftp://x.example/' })],
    ],
    [
      'format',
      (s) => s.batchResults(caller, jobId, { format: 'xml' as never }),
      () => [`/v1/verify/${jobId}/results?format=xml`],
    ],
    ['page: zero', (s) => s.listFilters(caller, { page: 0 }), () => ['/v1/filters?page=0']],
    [
      'page: not a number',
      (s) => s.listFilters(caller, { page: 'two' as never }),
      () => ['/v1/filters?page=two'],
    ],
    [
      'per_page',
      (s) => s.listFilters(caller, { perPage: 1000 }),
      () => ['/v1/filters?per_page=1000'],
    ],
    [
      'filter_type of a list',
      (s) => s.listFilters(caller, { type: 'host' as never }),
      () => ['/v1/filters?filter_type=host'],
    ],
    [
      'filter_type of a new filter',
      (s) => s.createFilter(caller, { value: 'a.example', type: 'host' as never, action: 'block' }),
      () => ['/v1/filters', post({ value: 'a.example', filter_type: 'host', action: 'block' })],
    ],
    [
      'action',
      (s) =>
        s.createFilter(caller, { value: 'a.example', type: 'domain', action: 'drop' as never }),
      () => ['/v1/filters', post({ value: 'a.example', filter_type: 'domain', action: 'drop' })],
    ],
    [
      'value: not a domain',
      (s) => s.createFilter(caller, { value: 'not a domain!', type: 'domain', action: 'block' }),
      () => [
        '/v1/filters',
        post({ value: 'not a domain!', filter_type: 'domain', action: 'block' }),
      ],
    ],
    [
      'value: not text',
      (s) => s.createFilter(caller, { value: 42 as never, type: 'domain', action: 'block' }),
      () => ['/v1/filters', post({ value: 42, filter_type: 'domain', action: 'block' })],
    ],
    [
      'reason',
      (s) =>
        s.createFilter(caller, {
          value: 'a.example',
          type: 'domain',
          action: 'block',
          reason: 'r'.repeat(501),
        }),
      () => [
        '/v1/filters',
        post({
          value: 'a.example',
          filter_type: 'domain',
          action: 'block',
          reason: 'r'.repeat(501),
        }),
      ],
    ],
    [
      'id of a filter',
      (s) => s.deleteFilter(caller, 'a.b'),
      () => ['/v1/filters/a.b', { method: 'DELETE' }],
    ],
    ['id of a job', (s) => s.batchStatus(caller, 'a.b'), () => ['/v1/verify/a.b']],
  ];

  it.each(cases)('%s', async (_name, call, request) => {
    const expected = await library(call);
    const [path, init] = request();
    const answered = await http(path, init);
    expect({ field: answered.field, message: answered.message }).toEqual({
      field: expected.field,
      message: expected.message,
    });
  });

  it('an idempotency key: one rule, named as the caller sent it', async () => {
    const key = 'k'.repeat(256);
    const expected = await library((s) =>
      s.verify(caller, 'risky@example.com', { requestId: key }),
    );
    const answered = await http('/v1/verify?email=risky@example.com', {
      headers: { 'idempotency-key': key },
    });
    expect(expected.field).toBe('request_id');
    expect(answered.field).toBe('idempotency-key');
    expect(String(answered.message).replace('idempotency-key', 'request_id')).toBe(
      expected.message,
    );
  });
});
