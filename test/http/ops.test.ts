import { afterEach, describe, expect, it } from 'vitest';
import { createPrometheusMetrics } from '../../src/adapters/prometheus/metrics.js';
import { createEngine } from '../../src/compose/engine.js';
import { createHandler } from '../../src/http/handler.js';
import { serve, type RunningServer } from '../../src/http/node-server.js';
import type { Store } from '../../src/ports/store.js';
import { createService } from '../../src/compose/service.js';
import { type Service } from '../../src/service/service.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { parseSamples, valueOf } from '../metrics/prometheus-text.js';
import { STORES } from '../helpers/service.js';

function world(store: Store) {
  const metrics = createPrometheusMetrics({ processMetrics: false });
  const engine = createEngine({ offline: true, observer: metrics.observer });
  const service = createService({ engine, store });
  return { metrics, service };
}

async function account(service: Service): Promise<string> {
  const created = await service.admin.createAccount({ email: 'o@example.org', credits: 100 });
  return (await service.admin.createKey(created.id)).secret;
}

const get = (path: string, init: RequestInit = {}) => new Request(`http://api.test${path}`, init);

describe.each(STORES)('operations endpoints through the handler (%s)', (_name, makeStore) => {
  it('answers /health always, /ready once started and while the store answers', async () => {
    const store = makeStore();
    const { metrics, service } = world(store);
    const handler = createHandler(service, { operations: { metrics } });

    const health = await handler(get('/health'));
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });

    const early = await handler(get('/ready'));
    expect(early.status).toBe(503);
    expect(await early.json()).toEqual({
      error: 'not_ready',
      message: 'Not ready: the service is not started.',
      service: 'stopped',
      store: 'ok',
    });

    await service.start();
    const ready = await handler(get('/ready'));
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', service: 'started', store: 'ok' });

    await store.close();
    const closed = await handler(get('/ready'));
    expect(closed.status).toBe(503);
    expect(await closed.json()).toMatchObject({
      error: 'not_ready',
      service: 'started',
      store: 'unavailable',
    });
    // Liveness never asks the store: a closed store is for /ready to say.
    expect((await handler(get('/health'))).status).toBe(200);
    await service.stop();
  });

  it('serves /metrics counting requests by route and status, without keys or ids', async () => {
    const store = makeStore();
    const { metrics, service } = world(store);
    const secret = await account(service);
    const handler = createHandler(service, { operations: { metrics } });
    const auth = { headers: { authorization: `Bearer ${secret}` } };

    expect((await handler(get('/v1/verify?email=ann@example.org&method=quick', auth))).status).toBe(
      200,
    );
    expect((await handler(get('/v1/verify?email=bob@mailinator.com', auth))).status).toBe(200);
    expect((await handler(get('/v1/verify?email=ann@example.org'))).status).toBe(401);
    expect((await handler(get('/v1/verify/batch_nope', auth))).status).toBe(404);
    expect((await handler(get('/nowhere/at/all'))).status).toBe(404);
    expect((await handler(get('/v1/account', { ...auth, method: 'BREW' }))).status).toBe(405);

    const response = await handler(get('/metrics'));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await response.text();
    const samples = parseSamples(text);
    const requests = (labels: Record<string, string>) =>
      valueOf(samples, 'mailverdict_http_requests_total', labels);
    expect(requests({ route: 'verify', method: 'GET', status: '200' })).toBe(2);
    expect(requests({ route: 'verify', method: 'GET', status: '401' })).toBe(1);
    expect(requests({ route: 'batch', method: 'GET', status: '404' })).toBe(1);
    expect(requests({ route: 'unmatched', method: 'GET', status: '404' })).toBe(1);
    expect(requests({ route: 'account', method: 'other', status: '405' })).toBe(1);
    expect(valueOf(samples, 'mailverdict_http_request_duration_seconds_count')).toBe(6);
    expect(
      valueOf(samples, 'mailverdict_http_request_duration_seconds_count', { route: 'verify' }),
    ).toBe(3);
    expect(
      valueOf(samples, 'mailverdict_verifications_total', {
        method: 'quick',
        state: 'deliverable',
      }),
    ).toBe(1);
    expect(
      valueOf(samples, 'mailverdict_verifications_total', {
        method: 'standard',
        state: 'risky',
      }),
    ).toBe(1);
    expect(text).not.toContain(secret);
    expect(text).not.toContain('batch_nope');
    expect(text).not.toContain('nowhere');
    await store.close();
  });
});

describe('operations endpoints: what a host of the fetch handler chooses', () => {
  it('are absent unless asked for, and /metrics only with a metrics endpoint', async () => {
    const service = createService({
      engine: createEngine({ offline: true }),
      store: createMemoryStore(),
    });
    const plain = createHandler(service);
    for (const path of ['/health', '/ready', '/metrics']) {
      const response = await plain(get(path));
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ error: 'not_found' });
    }
    const health = createHandler(service, { operations: {} });
    expect((await health(get('/health'))).status).toBe(200);
    expect((await health(get('/metrics'))).status).toBe(404);
    const none = createHandler(service, { operations: { health: false } });
    expect((await none(get('/health'))).status).toBe(404);
  });

  it('answer GET only, and need no key whatever the request carries', async () => {
    const service = createService({
      engine: createEngine({ offline: true }),
      store: createMemoryStore(),
    });
    const handler = createHandler(service, { operations: {} });
    const post = await handler(get('/health', { method: 'POST' }));
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    const bad = await handler(get('/health', { headers: { authorization: 'Bearer mv_sk_nope' } }));
    expect(bad.status).toBe(200);
    expect(bad.headers.get('x-ratelimit-limit')).toBeNull();
  });
});

describe('operations endpoints over real HTTP (mailverdict/node serve)', () => {
  const servers: RunningServer[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });

  it('serves /health and /ready by default, and /metrics when given metrics', async () => {
    const store = createMemoryStore();
    const { metrics, service } = world(store);
    const secret = await account(service);
    const server = await serve(service, { metrics });
    servers.push(server);
    expect(server.metrics).toBe(metrics);

    const health = await fetch(`${server.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${server.url}/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', service: 'started', store: 'ok' });

    const verify = await fetch(`${server.url}/v1/verify?email=ann@example.org&method=quick`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(verify.status).toBe(200);

    const scraped = await fetch(`${server.url}/metrics`);
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const samples = parseSamples(await scraped.text());
    expect(
      valueOf(samples, 'mailverdict_http_requests_total', {
        route: 'verify',
        method: 'GET',
        status: '200',
      }),
    ).toBe(1);
    expect(valueOf(samples, 'mailverdict_http_requests_total', { route: 'ready' })).toBe(1);
    expect(
      valueOf(samples, 'mailverdict_verifications_total', {
        method: 'quick',
        state: 'deliverable',
      }),
    ).toBe(1);

    await store.close();
    const closed = await fetch(`${server.url}/ready`);
    expect(closed.status).toBe(503);
    expect(await closed.json()).toMatchObject({ error: 'not_ready', store: 'unavailable' });
  });

  it('metrics: true counts HTTP requests and the process in a registry of its own', async () => {
    const service = createService({
      engine: createEngine({ offline: true }),
      store: createMemoryStore(),
    });
    const server = await serve(service, { metrics: true });
    servers.push(server);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const samples = parseSamples(text);
    expect(valueOf(samples, 'mailverdict_http_requests_total', { route: 'health' })).toBe(1);
    expect(valueOf(samples, 'mailverdict_process_cpu_seconds_total')).toBeGreaterThan(0);
  });

  it('serves no /metrics by default, and no /health when told not to', async () => {
    const service = createService({
      engine: createEngine({ offline: true }),
      store: createMemoryStore(),
    });
    const server = await serve(service, { health: false });
    servers.push(server);
    expect(server.metrics).toBeUndefined();
    expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
    expect((await fetch(`${server.url}/health`)).status).toBe(404);
  });
});
