import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeListener, serve, type RunningServer } from '../../src/http/node-server.js';
import type { Service } from '../../src/service/service.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { createMemoryDns } from '../../src/testing.js';
import { apiFixture } from '../helpers/service.js';
import { bearer, expectDocumented } from '../http/helpers.js';

/** mailverdict/node itself: what only a real server and socket show. */
describe('mailverdict/node', () => {
  const servers: RunningServer[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });

  /** A service whose single verify waits for `release`, to hold a request in flight. */
  function held(service: Service) {
    let release: () => void = () => undefined;
    let entered: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const started = new Promise<void>((resolve) => (entered = resolve));
    const signals: AbortSignal[] = [];
    const stops: string[] = [];
    const wrapped = {
      ...service,
      async verify(...args: Parameters<Service['verify']>) {
        if (args[2]?.signal !== undefined) signals.push(args[2].signal);
        entered();
        await gate;
        return service.verify(...args);
      },
      stop: async () => {
        stops.push('stopped');
      },
    } as Service;
    return { service: wrapped, release, started, signals, stops };
  }

  it('finishes requests in flight on close, refuses new ones, then stops batch work', async () => {
    const api = await apiFixture();
    const { secret } = await api.account();
    const hold = held(api.service);
    const server = await serve(hold.service, { onError: () => undefined });
    const inFlight = fetch(`${server.url}/v1/verify?email=deliverable@example.com`, {
      headers: bearer(secret),
    });
    await hold.started;
    let closed = false;
    const closing = server.close().then(() => (closed = true));
    // The listener is gone: a new connection is refused while the old request still runs.
    await expect(fetch(`${server.url}/v1/openapi.json`)).rejects.toThrow();
    expect(closed).toBe(false);
    hold.release();
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ state: 'deliverable' });
    await closing;
    expect(hold.stops).toEqual(['stopped']);
  });

  it('aborts the verification when the client goes away', async () => {
    // An engine that waits on DNS (offline ones answer at once and are given no signal).
    const api = await apiFixture(undefined, { dns: createMemoryDns({}) });
    const { secret } = await api.account();
    const hold = held(api.service);
    const server = await serve(hold.service, { onError: () => undefined });
    servers.push(server);
    const controller = new AbortController();
    const gone = fetch(`${server.url}/v1/verify?email=deliverable@example.com`, {
      headers: bearer(secret),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    await hold.started;
    controller.abort();
    await gone;
    const signal = hold.signals[0] as AbortSignal;
    // Resolves when the server notices; the test's own timeout is the only clock.
    await new Promise((resolve) =>
      signal.aborted ? resolve(undefined) : signal.addEventListener('abort', resolve),
    );
    expect(signal.aborted).toBe(true);
    hold.release();
  });

  it('answers a request line over 16 KB with 431 and the envelope', async () => {
    const api = await apiFixture();
    const server = await serve(api.service, { onError: () => undefined });
    servers.push(server);
    const response = await fetch(`${server.url}/v1/verify?email=${'a'.repeat(40_000)}`);
    // The request line counts against the header section's 16 KiB: node cannot tell us which
    // of the two ran over, and RFC 6585's 431 says the section was too large.
    expect(response.status).toBe(431);
    expect(await response.json()).toMatchObject({ error: 'request_header_fields_too_large' });
  });

  it('answers a request the fetch API cannot represent with the envelope', async () => {
    const api = await apiFixture();
    const server = await serve(api.service, { onError: () => undefined });
    servers.push(server);
    // A Host that is no host cannot make a URL, nor can a target in neither origin nor
    // absolute form. (An absolute-form target is taken, RFC 9112 3.2.2: http-protocol.test.ts.)
    for (const [path, host] of [
      ['/v1/account', 'bad host'],
      ['ftp://elsewhere.example/v1/account', undefined],
    ] as const) {
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(
          { host: '127.0.0.1', port: server.port, path, headers: host ? { host } : {} },
          (res) => {
            let body = '';
            res.on('data', (chunk: Buffer) => (body += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end();
      });
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body)).toMatchObject({ error: 'invalid_request' });
    }
  });

  it('serves the API on the SQLite store', async () => {
    const store = createSqliteStore(':memory:');
    const api = await apiFixture(store);
    const { secret } = await api.account();
    const server = await serve(api.service, { onError: () => undefined });
    servers.push(server);
    const path = '/v1/verify?email=alice@example.org&method=quick&detailed=true';
    const response = await fetch(`${server.url}${path}`, { headers: bearer(secret) });
    const text = await response.text();
    const reply = {
      status: response.status,
      headers: response.headers,
      text,
      body: JSON.parse(text),
    };
    expectDocumented('GET', path, reply);
    expect(reply.body).toMatchObject({ email: 'alice@example.org', domain: 'example.org' });
    expect(response.headers.get('x-ratelimit-remaining')).toBe('299');
    await server.close();
    servers.pop();
    await store.close();
  });
});

describe('createNodeListener with a fetch handler of your own', () => {
  it('serves its Responses, and answers 500 when it throws', async () => {
    const server = createServer(
      createNodeListener(async (request) => {
        if (new URL(request.url).pathname === '/boom') throw new Error('secret detail');
        return new Response(`hello ${request.method} ${await request.text()}`, { status: 201 });
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const ok = await fetch(`${base}/x`, { method: 'POST', body: 'there' });
    expect(ok.status).toBe(201);
    expect(await ok.text()).toBe('hello POST there');
    const boom = await fetch(`${base}/boom`);
    expect(boom.status).toBe(500);
    expect(await boom.json()).toEqual({
      error: 'internal_error',
      message: 'The request handler failed.',
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
