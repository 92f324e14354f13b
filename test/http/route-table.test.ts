import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAPI_DOCUMENT } from '../../src/http/openapi.js';
import { apiFixture } from '../helpers/service.js';
import { bearer, directClient, type Client } from './helpers.js';

/**
 * The handler answers the paths and methods the document lists, and only those: both come from
 * the route table (src/http/routes.ts), and this holds them to it from the outside.
 */
describe('the route table', () => {
  let client: Client;
  let secret: string;
  beforeAll(async () => {
    const api = await apiFixture();
    client = await directClient(api.service);
    ({ secret } = await api.account());
  });
  afterAll(async () => {
    await client.close();
  });

  const paths = OPENAPI_DOCUMENT.paths as Record<string, Record<string, unknown>>;
  const concrete = (template: string) => template.replace('{id}', 'x_1');

  it.each(Object.keys(paths))('%s: Allow lists the methods the document gives it', async (path) => {
    const reply = await client.call(concrete(path), { method: 'OPTIONS' });
    expect(reply.status).toBe(204);
    const documented = Object.keys(paths[path] ?? {}).map((method) => method.toUpperCase());
    const allowed = (reply.headers.get('allow') ?? '').split(', ');
    expect(allowed.sort()).toEqual([...new Set([...documented, 'OPTIONS'])].sort());
  });

  it.each(
    Object.entries(paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => method !== 'options')
        .map((method) => [method.toUpperCase(), path] as const),
    ),
  )('%s %s reaches its route', async (method, path) => {
    const reply = await client.call(concrete(path), {
      method,
      headers: bearer(secret, { 'content-type': 'application/json' }),
      ...(method === 'POST' ? { body: '{}' } : {}),
    });
    // Whatever the route says of this request, it is the route's answer, not the router's.
    expect(reply.status).not.toBe(405);
    if (reply.status === 404) expect(reply.body?.message ?? '').not.toMatch(/No such endpoint/);
  });
});
