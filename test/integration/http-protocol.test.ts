import { createConnection } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiFixture, type ApiFixture } from '../helpers/service.js';
import { bearer, nodeClient } from '../http/helpers.js';

/** What only a real socket shows of the API's HTTP semantics (test/http/protocol.test.ts). */
describe('/v1 API protocol over loopback HTTP', () => {
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

  it('sends no Content-Length with a 204 (RFC 9110 8.6)', async () => {
    for (const path of ['/v1/account', '/v1/verify', '/v1/filters/flt_1']) {
      const reply = await fetch(`${server.server.url}${path}`, { method: 'OPTIONS' });
      expect(reply.status).toBe(204);
      expect(reply.headers.get('content-length')).toBeNull();
      expect(reply.headers.get('transfer-encoding')).toBeNull();
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

  /** One request written as is on a fresh connection, and everything the server answered. */
  function exchange(text: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = createConnection(server.server.port, '127.0.0.1', () => socket.write(text));
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (answer += chunk));
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
    });
  }

  it('takes a request target in absolute form (RFC 9112 3.2.2)', async () => {
    const answer = await exchange(
      `GET http://127.0.0.1:${server.server.port}/v1/account HTTP/1.1\r\n` +
        `Host: 127.0.0.1\r\nAuthorization: Bearer ${secret}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('"plan":"enterprise"');
  });

  it('answers a request before refusing the malformed bytes that follow it on the connection', async () => {
    // The verification is charged; the bytes after it failed to parse while it ran, and the
    // raw 400 for them was written first, so its answer was lost (and still charged).
    const { secret: own } = await api.account();
    const answer = await exchange(
      `GET /v1/verify?email=bad..dots@example.com HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
        `Authorization: Bearer ${own}\r\n\r\nxx\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('"reason":"invalid_email"');
    // Then the refusal of what followed, and the connection closed.
    expect(answer).toMatch(/HTTP\/1\.1 400 [\s\S]*"error":"invalid_request"/);
    const account = await server.call('/v1/account', { headers: bearer(own) });
    expect(account.body.credits).toMatchObject({ used: 2 });
  });

  it('refuses at once a malformed chunk inside a body, which never ends', async () => {
    const { secret: own } = await api.account();
    const answer = await exchange(
      `POST /v1/verify HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${own}\r\n` +
        `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `5\r\n{"ema\r\nzz\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 [\s\S]*"error":"invalid_request"/);
  });

  it('answers a request target that is no URL with the envelope', async () => {
    const answer = await exchange(
      `OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('"error":"invalid_request"');
  });
});
