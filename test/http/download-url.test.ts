import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withRemoteAddress } from '../../src/http/client-ip.js';
import { createHandler } from '../../src/http/handler.js';
import { listeningBaseUrl, serve, type RunningServer } from '../../src/http/node-server.js';
import { apiFixture, type ApiFixture } from '../helpers/service.js';
import { bearer, DIRECT_IP } from './helpers.js';

/**
 * `download_url` comes from configuration (the handler's or the service's base URL, or the
 * address mailverdict/node listens on), never from what a client writes: its Host header or
 * an absolute-form request target.
 */
describe('download_url trusts only configuration', () => {
  let api: ApiFixture;
  let secret: string;
  beforeAll(async () => {
    api = await apiFixture();
    ({ secret } = await api.account());
  });

  /** Submits a batch and reads its status through `handler`, both at `origin`. */
  async function statusThrough(handler: (request: Request) => Promise<Response>, origin: string) {
    const call = (path: string, init: RequestInit = {}) =>
      handler(withRemoteAddress(new Request(`${origin}${path}`, init), DIRECT_IP));
    const submitted = await call('/v1/verify', {
      method: 'POST',
      headers: bearer(secret, { 'content-type': 'application/json' }),
      body: JSON.stringify({ emails: ['risky@example.com'] }),
    });
    const { id } = (await submitted.json()) as { id: string };
    await api.service.batchWork.idle();
    const status = (await (await call(`/v1/verify/${id}`, { headers: bearer(secret) })).json()) as {
      download_url: string;
    };
    return { id, url: status.download_url };
  }

  it('a handler with no base URL answers the path, whatever origin the request claims', async () => {
    const handler = createHandler(api.service);
    const { id, url } = await statusThrough(handler, 'http://evil.example');
    expect(url).toBe(`/v1/verify/${id}/results`);
  });

  it("a handler's base URL is the one every job it takes keeps", async () => {
    const handler = createHandler(api.service, { baseUrl: 'https://api.example.com/mv?x=1' });
    const { id, url } = await statusThrough(handler, 'http://evil.example');
    expect(url).toBe(`https://api.example.com/mv/v1/verify/${id}/results`);
    // Read through another handler, configured otherwise: the job's own base still.
    const other = createHandler(api.service, { baseUrl: 'https://other.example/' });
    const response = await other(
      withRemoteAddress(
        new Request(`https://other.example/v1/verify/${id}`, { headers: bearer(secret) }),
        DIRECT_IP,
      ),
    );
    expect(((await response.json()) as { download_url: string }).download_url).toBe(url);
  });

  it("one rule picks the base: the handler's baseUrl, else the service's, else defaultBaseUrl", async () => {
    const withBase = await apiFixture(
      undefined,
      { offline: true },
      { baseUrl: 'https://svc.example/' },
    );
    const own = await withBase.account();
    const cases = [
      [api, {}, null],
      [api, { defaultBaseUrl: 'http://127.0.0.1:9/' }, 'http://127.0.0.1:9/'],
      [withBase, { defaultBaseUrl: 'http://127.0.0.1:9/' }, 'https://svc.example/'],
      [
        withBase,
        { baseUrl: 'https://edge.example/', defaultBaseUrl: 'http://127.0.0.1:9/' },
        'https://edge.example/',
      ],
    ] as const;
    for (const [fixture, options, base] of cases) {
      const key = fixture === api ? secret : own.secret;
      const handler = createHandler(fixture.service, options);
      const call = (path: string, init: RequestInit = {}) =>
        handler(withRemoteAddress(new Request(`http://evil.example${path}`, init), DIRECT_IP));
      const submitted = await call('/v1/verify', {
        method: 'POST',
        headers: bearer(key, { 'content-type': 'application/json' }),
        body: JSON.stringify({ emails: ['risky@example.com'] }),
      });
      const { id } = (await submitted.json()) as { id: string };
      await fixture.service.batchWork.idle();
      const status = (await (await call(`/v1/verify/${id}`, { headers: bearer(key) })).json()) as {
        download_url: string;
      };
      expect(status.download_url).toBe(`${base ?? '/'}v1/verify/${id}/results`);
    }
  });

  describe('mailverdict/node with no base URL', () => {
    let server: RunningServer;
    beforeAll(async () => {
      server = await serve(api.service, { startService: false, onError: () => undefined });
    });
    afterAll(async () => {
      await server.close();
    });

    /** A raw request: fetch will not send a Host of our choosing, nor an absolute target. */
    function raw(
      path: string,
      headers: Record<string, string>,
      body?: string,
    ): Promise<{ status: number; body: Record<string, unknown> }> {
      return new Promise((resolve, reject) => {
        const request = httpRequest(
          { host: '127.0.0.1', port: server.port, path, method: body ? 'POST' : 'GET', headers },
          (response) => {
            let text = '';
            response.on('data', (chunk: Buffer) => (text += chunk.toString()));
            response.on('end', () =>
              resolve({
                status: response.statusCode ?? 0,
                body: JSON.parse(text) as Record<string, unknown>,
              }),
            );
          },
        );
        request.on('error', reject);
        request.end(body);
      });
    }

    it('builds it on the listening address, port included, never on Host or the target', async () => {
      const evil = bearer(secret, { host: 'evil.example', 'content-type': 'application/json' });
      const submitted = await raw(
        'http://evil.example/v1/verify',
        evil,
        JSON.stringify({ emails: ['risky@example.com'] }),
      );
      expect(submitted.status).toBe(202);
      const id = submitted.body.id as string;
      await api.service.batchWork.idle();
      const expected = `http://127.0.0.1:${server.port}/v1/verify/${id}/results`;
      for (const target of [`/v1/verify/${id}`, `http://evil.example:81/v1/verify/${id}`]) {
        const status = await raw(target, bearer(secret, { host: 'evil.example' }));
        expect(status.body.download_url).toBe(expected);
      }
      // And it fetches the results.
      const results = await fetch(expected, { headers: bearer(secret) });
      expect(results.status).toBe(200);
    });
  });

  it.each([
    ['127.0.0.1', 'http://127.0.0.1:8787/'],
    ['::1', 'http://[::1]:8787/'],
    ['localhost', 'http://localhost:8787/'],
    ['192.0.2.10', 'http://192.0.2.10:8787/'],
    // A wildcard names every address and none: its loopback address stands for it.
    ['0.0.0.0', 'http://127.0.0.1:8787/'],
    ['::', 'http://[::1]:8787/'],
  ])('the listening address %s is the base %s', (host, base) => {
    expect(listeningBaseUrl(host, 8787)).toBe(base);
  });
});
