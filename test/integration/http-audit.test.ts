import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiFixture, bearer, nodeClient, type ApiFixture } from '../http/helpers.js';

/** What only a real socket shows of the audit's fixes (test/http/audit.test.ts). */
describe('/v1 API audit over loopback HTTP', () => {
  let api: ApiFixture;
  let secret: string;
  let server: Awaited<ReturnType<typeof nodeClient>>;

  beforeAll(async () => {
    api = await apiFixture();
    ({ secret } = await api.account());
    server = await nodeClient(api.service);
  });
  afterAll(async () => {
    await server.close();
  });

  it('answers HEAD with the length GET would send and no body', async () => {
    for (const path of ['/v1/account', '/v1/openapi.json', '/v1/nowhere']) {
      const url = `${server.server.url}${path}`;
      const get = await fetch(url, { headers: bearer(secret) });
      const text = await get.text();
      const head = await fetch(url, { method: 'HEAD', headers: bearer(secret) });
      expect(head.status).toBe(get.status);
      expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
      expect(await head.text()).toBe('');
    }
  });

  it('keeps the connection usable after a HEAD of streamed results', async () => {
    const submitted = await server.call('/v1/verify', {
      method: 'POST',
      headers: bearer(secret, { 'content-type': 'application/json' }),
      body: JSON.stringify({ emails: ['a@example.org'] }),
    });
    await api.service.batchWork.idle();
    const url = `${server.server.url}/v1/verify/${submitted.body.id}/results`;
    const head = await fetch(url, { method: 'HEAD', headers: bearer(secret) });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('application/json');
    expect(await head.text()).toBe('');
    const get = await fetch(url, { headers: bearer(secret) });
    expect(((await get.json()) as { results: unknown[] }).results).toHaveLength(1);
  });
});
