import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createNodeListener } from '../../src/http/node-server.js';
import type { Service } from '../../src/service/service.js';

/**
 * The README's embedding examples (examples/*.ts) run as written: each is imported as a user
 * would (by package name, aliased to src/ in vitest.config.ts), served on loopback, and
 * called; and the README quotes each file whole, so the two cannot drift apart.
 */
const dir = mkdtempSync(join(tmpdir(), 'mailverdict-examples-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const examples = new URL('../../examples/', import.meta.url);
// A variable, so that tsc does not follow the import into examples/ from here.
const load = (name: string): Promise<Record<string, unknown>> =>
  import(new URL(name, examples).href);

async function keyOf(service: Service): Promise<string> {
  const account = await service.admin.createAccount({ email: 'ops@example.org', credits: 10 });
  return (await service.admin.createKey(account.id)).secret;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const close = (server: Server) => new Promise((resolve) => server.close(resolve));

async function verify(base: string, secret: string): Promise<Response> {
  return fetch(`${base}/v1/verify?email=deliverable@example.com`, {
    headers: { authorization: `Bearer ${secret}` },
  });
}

describe('examples', () => {
  it('hono.ts: the API inside a Hono app', async () => {
    const { app, service } = (await load('hono.ts')) as {
      app: { fetch: (request: Request) => Promise<Response> };
      service: Service;
    };
    const secret = await keyOf(service);
    const direct = await app.fetch(
      new Request('https://api.example.com/v1/verify?email=deliverable@example.com', {
        headers: { authorization: `Bearer ${secret}` },
      }),
    );
    expect(direct.status).toBe(200);
    expect(await direct.json()).toMatchObject({ state: 'deliverable' });
    expect(await (await app.fetch(new Request('http://x/health'))).text()).toBe('ok');
    const missing = await app.fetch(new Request('http://x/v1/nothing'));
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: 'not_found' });
    // And on node:http, through mailverdict/node's listener.
    const server = createServer(createNodeListener((request) => app.fetch(request)));
    const base = await listen(server);
    const overHttp = await verify(base, secret);
    expect(overHttp.status).toBe(200);
    expect(overHttp.headers.get('x-ratelimit-limit')).toBe('10');
    await close(server);
  });

  it('express.ts: the API inside an Express app, through a small adapter', async () => {
    const { app, service } = (await load('express.ts')) as {
      app: { listen: (port: number, host: string, ready: () => void) => Server };
      service: Service;
    };
    const secret = await keyOf(service);
    const server = await new Promise<Server>((resolve) => {
      const made = app.listen(0, '127.0.0.1', () => resolve(made));
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const reply = await verify(base, secret);
    expect(reply.status).toBe(200);
    expect(await reply.json()).toMatchObject({ state: 'deliverable' });
    const created = await fetch(`${base}/v1/filters`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ value: 'spam.example', filter_type: 'domain', action: 'block' }),
    });
    expect(created.status).toBe(201);
    const form = await fetch(`${base}/v1/filters`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'text/plain' },
      body: 'spam.example',
    });
    expect(form.status).toBe(415);
    // The socket's address reaches private keys' allow-lists through the adapter.
    const account = await service.admin.createAccount({ email: 'ip@example.org' });
    const limited = await service.admin.createKey(account.id, { allowedIps: ['192.0.2.0/24'] });
    const refused = await fetch(`${base}/v1/account`, {
      headers: { authorization: `Bearer ${limited.secret}` },
    });
    expect(refused.status).toBe(403);
    expect(await (await fetch(`${base}/health`)).text()).toBe('ok');
    await close(server);
  });

  it('node-http.ts: standalone with serve(), and beside other routes', async () => {
    const example = (await load('node-http.ts')) as {
      standalone: (
        path: string,
        port: number,
      ) => Promise<{ service: Service; server: { url: string }; stop: () => Promise<void> }>;
      embedded: (path: string) => Promise<{
        service: Service;
        server: Server;
        store: { close(): Promise<void> };
      }>;
    };
    const alone = await example.standalone(join(dir, 'standalone.db'), 0);
    const reply = await verify(alone.server.url, await keyOf(alone.service));
    expect(reply.status).toBe(200);
    await alone.stop();

    const mounted = await example.embedded(join(dir, 'embedded.db'));
    const base = await listen(mounted.server);
    expect((await verify(base, await keyOf(mounted.service))).status).toBe(200);
    expect(await (await fetch(`${base}/`)).text()).toBe('my app');
    await close(mounted.server);
    await mounted.service.stop();
    await mounted.store.close();
  });

  it('client.ts: verify, a batch waited for and streamed, errors told apart', async () => {
    const { apiFixture } = await import('../helpers/service.js');
    const { serve } = await import('../../src/node.js');
    const fixture = await apiFixture();
    const { secret } = await fixture.account();
    const server = await serve(fixture.service, { onError: () => undefined });
    const example = (await load('client.ts')) as {
      undeliverableOf(baseUrl: string, apiKey: string, emails: string[]): Promise<string[]>;
      explain(error: unknown): string;
    };
    const { createClient } = await import('../../src/client.js');
    let open = true;
    try {
      const found = await example.undeliverableOf(server.url, secret, [
        'ann@example.org',
        'bad..dots@example.org',
        'undeliverable@example.com',
      ]);
      expect(found).toEqual(['bad..dots@example.org', 'undeliverable@example.com']);
      const refused = await createClient({ baseUrl: server.url, apiKey: 'mv_sk_x' })
        .account()
        .catch((error: unknown) => error);
      expect(example.explain(refused)).toMatch(/^refused: 401 unauthorized: /);
      const client = createClient({ baseUrl: server.url, apiKey: secret, maxRetries: 0 });
      await server.close();
      open = false;
      const down = await client.account().catch((error: unknown) => error);
      expect(example.explain(down)).toMatch(/^no usable answer \(connection_failed\): /);
    } finally {
      if (open) await server.close();
    }
  });

  it('webhook-receiver.ts: a real delivery verified, a forged one refused', async () => {
    const { createMemoryStore, createService } = await import('../../src/service.js');
    const { createEngine } = await import('../../src/compose/engine.js');
    const service = createService({
      engine: createEngine({ offline: true }),
      store: createMemoryStore(),
      batch: { allowPrivateNetworks: true, allowHttpCallbacks: true },
    });
    const account = await service.admin.createAccount({ email: 'o@example.org', credits: 10 });
    const { webhookSecret } = await service.admin.rotateWebhookSecret(account.id);
    const { webhookReceiver } = (await load('webhook-receiver.ts')) as {
      webhookReceiver(secret: string, onEvent: (event: { id: string }) => Promise<void>): Server;
    };
    const events: { id: string }[] = [];
    const server = webhookReceiver(webhookSecret, async (event) => void events.push(event));
    const base = await listen(server);
    const job = await service.submitBatch(
      { accountId: account.id },
      { emails: ['a@example.org'], method: 'quick', callbackUrl: `${base}/hook` },
    );
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    expect(events.map((event) => event.id)).toEqual([job.id]);
    const forged = await fetch(`${base}/hook`, {
      method: 'POST',
      headers: {
        'webhook-id': 'msg_x',
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': 'v1,AAAA',
      },
      body: '{"event":"batch.completed","id":"batch_forged"}',
    });
    expect(forged.status).toBe(400);
    expect(events).toHaveLength(1);
    await service.stop();
    await close(server);
  });

  it('are quoted whole in the README', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    for (const name of [
      'hono.ts',
      'express.ts',
      'node-http.ts',
      'client.ts',
      'webhook-receiver.ts',
    ]) {
      const source = readFileSync(new URL(name, examples), 'utf8').trim();
      expect(readme, `README quotes examples/${name}`).toContain(source);
    }
  });
});
