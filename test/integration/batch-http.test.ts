import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createNodeWebhookSender } from '../../src/adapters/node/webhook.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { createEngine } from '../../src/compose/engine.js';
import { serve, type RunningServer } from '../../src/http/node-server.js';
import type { Dns } from '../../src/ports/dns.js';
import type { Store } from '../../src/ports/store.js';
import { createService } from '../../src/compose/service.js';
import { type BatchOptions, type Service } from '../../src/service/service.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { gatedDns } from '../helpers/fakes.js';
import { startWebhookReceiver, type WebhookHit } from '../helpers/webhook-receiver.js';

/**
 * Batch jobs over real HTTP (mailverdict/node on 127.0.0.1), on a SQLite file, with a real
 * webhook receiver on 127.0.0.1: what a customer's client and a hostile caller see.
 */
const dir = mkdtempSync(join(tmpdir(), 'mailverdict-batch-http-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A loopback webhook receiver answering every POST with `status`, closed after the test. */
async function receiver(status = 204) {
  const hook = await startWebhookReceiver(() => status);
  cleanups.push(hook.close);
  return hook;
}

const CALLBACKS: BatchOptions = {
  allowHttpCallbacks: true,
  allowPrivateNetworks: true,
  webhookSender: createNodeWebhookSender({ allowPrivateNetworks: true }),
};

/** A service on `store` served on 127.0.0.1, port 0. */
async function api(
  store: Store,
  options: { dns?: Dns; batch?: BatchOptions; handlerBaseUrl?: string } = {},
) {
  const service: Service = createService({
    engine: createEngine(options.dns === undefined ? { offline: true } : { dns: options.dns }),
    store,
    batch: { ...CALLBACKS, ...options.batch },
  });
  const server: RunningServer = await serve(service, {
    port: 0,
    hostname: '127.0.0.1',
    onError: () => undefined,
    ...(options.handlerBaseUrl === undefined ? {} : { baseUrl: options.handlerBaseUrl }),
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await server.close();
    await service.stop();
    await store.close();
  };
  cleanups.push(close);
  const call = async (path: string, init: RequestInit & { key: string }) => {
    const { key, ...rest } = init;
    const response = await fetch(`${server.url}${path}`, {
      ...rest,
      headers: { authorization: `Bearer ${key}`, ...(rest.headers as Record<string, string>) },
    });
    const text = await response.text();
    const type = response.headers.get('content-type') ?? '';
    return {
      status: response.status,
      headers: response.headers,
      text,
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read JSON freely
      body: (type.startsWith('application/json') && text !== '' ? JSON.parse(text) : null) as any,
    };
  };
  const submit = (key: string, body: unknown) =>
    call('/v1/verify', {
      key,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  return { service, server, call, submit, close };
}

async function account(service: Service, credits = 1000) {
  const created = await service.admin.createAccount({
    email: `ops${Math.random().toString(36).slice(2)}@example.org`,
    plan: 'enterprise',
    credits,
  });
  const { secret } = await service.admin.createKey(created.id);
  return { accountId: created.id, key: secret, webhookSecret: created.webhookSecret };
}

const dbPath = () => join(dir, `${Math.random().toString(36).slice(2)}.db`);

describe('batch jobs over HTTP on SQLite', () => {
  it('points download_url at the service batch.baseUrl in status and webhook alike', async () => {
    const hook = await receiver();
    const store = createSqliteStore(dbPath());
    const { service, call, submit } = await api(store, {
      batch: { baseUrl: 'https://api.example.com/mv/' },
    });
    const { key } = await account(service);
    const submitted = await submit(key, { emails: ['a@example.org'], callback_url: hook.url });
    expect(submitted.status).toBe(202);
    const { id } = submitted.body as { id: string };
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    const status = await call(`/v1/verify/${id}`, { key });
    const expected = `https://api.example.com/mv/v1/verify/${id}/results`;
    expect(status.body.download_url).toBe(expected);
    expect(hook.hits).toHaveLength(1);
    expect(JSON.parse(hook.hits[0]?.body ?? '{}')).toMatchObject({ download_url: expected });
  });

  it("lets the handler's own baseUrl win, and defaults to the address the server listens on", async () => {
    const store = createSqliteStore(dbPath());
    const withBase = await api(store, { handlerBaseUrl: 'https://edge.example.com/api' });
    const { key } = await account(withBase.service);
    const { id } = (await withBase.submit(key, { emails: ['a@example.org'] })).body as {
      id: string;
    };
    await withBase.service.batchWork.idle();
    expect((await withBase.call(`/v1/verify/${id}`, { key })).body.download_url).toBe(
      `https://edge.example.com/api/v1/verify/${id}/results`,
    );
    const plain = await api(createSqliteStore(dbPath()));
    const other = await account(plain.service);
    const job = (await plain.submit(other.key, { emails: ['a@example.org'] })).body as {
      id: string;
    };
    await plain.service.batchWork.idle();
    expect((await plain.call(`/v1/verify/${job.id}`, { key: other.key })).body.download_url).toBe(
      `${plain.server.url}/v1/verify/${job.id}/results`,
    );
  });

  it('gives status and webhook one download_url when host and service share a base with a query', async () => {
    // `serve --base-url` hands one URL to both: the webhook's download_url is built on the
    // service's base, without its query, and the status must not differ from it.
    const hook = await receiver();
    const base = 'https://api.example.com/mv?via=edge#top';
    const { service, call, submit } = await api(createSqliteStore(dbPath()), {
      batch: { baseUrl: base },
      handlerBaseUrl: base,
    });
    const { key } = await account(service);
    const submitted = await submit(key, { emails: ['a@example.org'], callback_url: hook.url });
    const { id } = submitted.body as { id: string };
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    const expected = `https://api.example.com/mv/v1/verify/${id}/results`;
    expect((await call(`/v1/verify/${id}`, { key })).body.download_url).toBe(expected);
    expect(JSON.parse(hook.hits[0]?.body ?? '{}')).toMatchObject({ download_url: expected });
  });

  it('refuses a lone surrogate that SQLite would store as U+FFFD and verify as deliverable', async () => {
    const store = createSqliteStore(dbPath());
    const { service, submit } = await api(store);
    const { accountId, key } = await account(service);
    // JSON.stringify keeps the lone surrogate as the escape \ud800, as a hostile client sends it.
    const reply = await submit(key, { emails: ['ok@example.org', '\ud800@example.org'] });
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ error: 'invalid_request', field: 'emails' });
    expect(await store.listJobs('processing')).toEqual([]);
    expect(await store.balance(accountId)).toMatchObject({ available: 1000, reserved: 0 });
  });

  it('streams hostile addresses as RFC 4180 CSV with formula cells defused, NDJSON a line each', async () => {
    const store = createSqliteStore(dbPath());
    const { service, call, submit } = await api(store);
    const { key } = await account(service);
    const emails = [
      '=HYPERLINK("http://x")@example.org',
      'a,b@example.org',
      '"quoted"@example.org',
      '+1@example.org',
      '-1@example.org',
      '@example.org',
      'plain@example.org',
    ];
    const { id } = (await submit(key, { emails, method: 'quick' })).body as { id: string };
    await service.batchWork.idle();
    const csv = await call(`/v1/verify/${id}/results`, { key, headers: { accept: 'text/csv' } });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const rows = csv.text.split('\r\n');
    expect(rows.at(-1)).toBe('');
    const firstCells = rows.slice(1, -1).map((row) => {
      if (!row.startsWith('"')) return row.slice(0, row.indexOf(','));
      const end = row.indexOf('",', 1);
      return row.slice(1, end).replace(/""/g, '"');
    });
    expect(firstCells).toEqual([
      `'=HYPERLINK("http://x")@example.org`,
      'a,b@example.org',
      '"quoted"@example.org',
      "'+1@example.org",
      "'-1@example.org",
      "'@example.org",
      'plain@example.org',
    ]);
    const ndjson = await call(`/v1/verify/${id}/results?format=ndjson`, { key });
    expect(ndjson.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = ndjson.text.split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines.slice(0, -1).map((line) => (JSON.parse(line) as { email: string }).email)).toEqual(
      emails,
    );
  });

  it('answers 409 with the progress early, 404 to another account, 400 to a malformed id', async () => {
    const dns = gatedDns({ 'example.org': ['mx.example.org'] });
    const store = createSqliteStore(dbPath());
    const { service, call, submit } = await api(store, { dns });
    const own = await account(service);
    const stranger = await account(service);
    const { id } = (await submit(own.key, { emails: ['a@example.org', 'b@example.org'] })).body as {
      id: string;
    };
    const early = await call(`/v1/verify/${id}/results`, { key: own.key });
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({
      error: 'batch_not_completed',
      status: 'processing',
      total_emails: 2,
      processed: 0,
      percent_complete: 0,
    });
    for (const path of [`/v1/verify/${id}`, `/v1/verify/${id}/results`]) {
      const foreign = await call(path, { key: stranger.key });
      expect(foreign.status).toBe(404);
      expect(foreign.body).toMatchObject({ error: 'not_found' });
    }
    const malformed = await call('/v1/verify/batch%2F..%2Fx', { key: own.key });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ error: 'invalid_request', field: 'id' });
    dns.open();
    await service.batchWork.idle();
    expect((await call(`/v1/verify/${id}/results`, { key: own.key })).status).toBe(200);
  });

  it('resumes on the same file after a stop mid-job: every address once, charged once, one signed webhook', async () => {
    const hook = await receiver();
    const path = dbPath();
    const zones: Record<string, readonly string[]> = {};
    const emails: string[] = [];
    for (let d = 0; d < 30; d++) {
      zones[`d${d}.example`] = [`mx.d${d}.example`];
      for (let i = 0; i < 4; i++) emails.push(`u${i}@d${d}.example`);
    }
    emails.splice(5, 0, 'U0@D0.example', 'deliverable@example.com');
    const dns = gatedDns(zones);
    const first = await api(createSqliteStore(path), { dns, batch: { flushSize: 5 } });
    const { accountId, key, webhookSecret } = await account(first.service);
    const { id } = (await first.submit(key, { emails, method: 'quick', callback_url: hook.url }))
      .body as { id: string };
    dns.open();
    while ((await first.call(`/v1/verify/${id}`, { key })).body.processed === 0) {
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await first.close();

    const store = createSqliteStore(path);
    const second = await api(store, { dns: createMemoryDns(zones) });
    await second.service.batchWork.idle();
    await second.service.batchWork.deliverWebhooks();
    const status = await second.call(`/v1/verify/${id}`, { key });
    expect(status.body).toMatchObject({
      status: 'completed',
      total_emails: 122,
      processed: 122,
      percent_complete: 100,
    });
    const results = await second.call(`/v1/verify/${id}/results`, { key });
    const records = (results.body as { results: { email: string; duplicate?: boolean }[] }).results;
    expect(records).toHaveLength(122);
    expect(records.filter((r) => r.duplicate === true)).toHaveLength(1);
    const perItem = (await store.ledgerEntries(accountId)).filter((e) => e.ref.includes(':item:'));
    expect(perItem).toHaveLength(120);
    expect(new Set(perItem.map((e) => e.ref)).size).toBe(120);
    expect(await store.balance(accountId)).toEqual({
      available: 880,
      reserved: 0,
      used: 120,
      total: 1000,
    });
    expect(hook.hits).toHaveLength(1);
    const [hit] = hook.hits as [WebhookHit];
    const event = new Webhook(webhookSecret).verify(
      hit.body,
      hit.headers as Record<string, string>,
    );
    expect(event).toMatchObject({
      event: 'batch.completed',
      id,
      status: 'completed',
      total_emails: 122,
      processed: 122,
    });
  });
});
