import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiError, NetworkError, type BatchRecord, type Client } from '../../src/client.js';
import { delay } from '../../src/delay.js';
import { flooded, startFaultProxy, type Fault, type FaultProxy } from '../helpers/fault-proxy.js';
import { startLoopbackApi, testClient, type LoopbackApi } from './helpers.js';

/**
 * The client behind a fault-injecting proxy in front of mailverdict/node: every fault ends in
 * success after the documented retries or in a typed error, never in an unbounded wait, an
 * unbounded read, a doubled job or a key sent elsewhere. Waits are asserted through the
 * injected sleep (what the rules asked for), never by the clock.
 */
let loopback: LoopbackApi;
let proxy: FaultProxy;
beforeAll(async () => {
  loopback = await startLoopbackApi();
  proxy = await startFaultProxy(loopback.server.url);
});
afterAll(async () => {
  await proxy.close();
  await loopback.close();
});
beforeEach(() => {
  proxy.seen.length = 0;
  proxy.plan(() => ({ kind: 'pass' }));
});

async function through(options: Parameters<typeof testClient>[2] = {}) {
  const { accountId, secret } = await loopback.key({ credits: 100_000 });
  return { api: testClient(proxy.url, secret, options), accountId, secret };
}

/** Faults for the first `n` requests matching `where`, then pass. */
function first(n: number, fault: Fault, where: (request: IncomingMessage) => boolean = () => true) {
  let left = n;
  proxy.plan((request) => {
    if (left > 0 && where(request)) {
      left--;
      return fault;
    }
    return { kind: 'pass' };
  });
}

const rateLimited = (headers: Record<string, string> = { 'retry-after': '1' }): Fault => ({
  kind: 'answer',
  status: 429,
  headers,
  body: JSON.stringify({ error: 'rate_limit_exceeded', message: 'slow down', retry_after: 1 }),
});
const unavailable: Fault = {
  kind: 'answer',
  status: 503,
  body: JSON.stringify({ error: 'unavailable', message: 'try later' }),
};

async function rejection(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe('retries by the rules', () => {
  it('429 with Retry-After: waits that long, then succeeds', async () => {
    const { api } = await through();
    first(2, rateLimited({ 'retry-after': '2' }));
    expect(await api.account()).toMatchObject({ plan: 'enterprise' });
    expect(api.waited).toEqual([2000, 2000]);
    expect(proxy.seen).toHaveLength(3);
  });

  it('429 without Retry-After (and without retry_after): exponential backoff, full jitter', async () => {
    const { api } = await through();
    first(3, {
      kind: 'answer',
      status: 429,
      body: '{"error":"rate_limit_exceeded","message":"x"}',
    });
    await api.account();
    // Jitter pinned at one half: half of 500, 1,000 and 2,000 ms.
    expect(api.waited).toEqual([250, 500, 1000]);
  });

  it('429 forever: the 429 as an ApiError after maxRetries, with its Retry-After', async () => {
    const { api } = await through({ maxRetries: 2 });
    proxy.plan(() => rateLimited());
    const error = await rejection(api.account());
    expect(error).toMatchObject({ status: 429, code: 'rate_limit_exceeded', retryAfter: 1 });
    expect(error.details).toEqual({ retry_after: 1 });
    expect(proxy.seen).toHaveLength(3);
    expect(api.waited).toEqual([1000, 1000]);
  });

  it('a Retry-After past maxRetryAfterMs is not waited for: thrown at once', async () => {
    const { api } = await through();
    proxy.plan(() => rateLimited({ 'retry-after': '3600' }));
    const error = await rejection(api.account());
    expect(error).toMatchObject({ status: 429, retryAfter: 3600 });
    expect(proxy.seen).toHaveLength(1);
    expect(api.waited).toEqual([]);
  });

  it('503s, then success; 503 forever: the 503 after maxRetries (default 3)', async () => {
    const { api } = await through();
    first(2, unavailable);
    await api.account();
    expect(api.waited).toEqual([250, 500]);
    proxy.seen.length = 0;
    proxy.plan(() => unavailable);
    expect(await rejection(api.account())).toMatchObject({ status: 503, code: 'unavailable' });
    expect(proxy.seen).toHaveLength(4);
  });

  it('500 then 200, 408 then 200; a 5xx without the envelope is still an ApiError', async () => {
    const { api } = await through();
    first(1, { kind: 'answer', status: 500, body: '<html>oops</html>' });
    await api.account();
    first(1, { kind: 'answer', status: 408, body: '' });
    await api.account();
    expect(proxy.seen.map((s) => s.fault)).toEqual(['answer', 'pass', 'answer', 'pass']);
    proxy.plan(() => ({ kind: 'answer', status: 502, body: 'Bad Gateway' }));
    const error = await rejection(api.account());
    expect(error).toMatchObject({ status: 502, code: 'http_error' });
    expect(error).not.toBeInstanceOf(NetworkError);
  });

  it('never retries another 4xx, nor a POST without an idempotency key', async () => {
    const { api } = await through();
    proxy.plan(() => ({
      kind: 'answer',
      status: 400,
      body: '{"error":"invalid_request","message":"no","field":"x"}',
    }));
    expect(await rejection(api.account())).toMatchObject({ status: 400, details: { field: 'x' } });
    expect(proxy.seen).toHaveLength(1);
    proxy.seen.length = 0;
    proxy.plan(() => unavailable);
    const create = api.filters.create({ value: 'x.example', type: 'domain', action: 'block' });
    expect(await rejection(create)).toMatchObject({ status: 503 });
    expect(proxy.seen).toHaveLength(1);
    expect(api.waited).toEqual([]);
  });

  it('a connection reset before the answer is retried; reset forever is a NetworkError', async () => {
    const { api } = await through({ maxRetries: 2 });
    first(2, { kind: 'reset' });
    await api.account();
    expect(proxy.seen).toHaveLength(3);
    proxy.seen.length = 0;
    proxy.plan(() => ({ kind: 'reset' }));
    const error = await rejection(api.account());
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ status: 0, code: 'connection_failed' });
    expect(error.cause).toBeDefined();
    expect(proxy.seen).toHaveLength(3);
  });

  it('a submission whose 202 was lost is sent again with the same key: one job', async () => {
    const { api, accountId } = await through();
    first(1, { kind: 'lose-answer' }, (request) => request.method === 'POST');
    const emails = Array.from({ length: 20 }, (_, i) => `user${i}@example.org`);
    const job = await api.submitBatch(emails);
    const posts = proxy.seen.filter((s) => s.method === 'POST');
    expect(posts.map((s) => s.fault)).toEqual(['lose-answer', 'pass']);
    const [lost, retried] = posts.map((s) => s.headers['idempotency-key']);
    expect(lost).toMatch(/^[0-9a-f-]{36}$/);
    expect(retried).toBe(lost);
    await api.waitForBatch(job.id);
    const jobs = [
      ...(await loopback.api.store.listJobs('processing')),
      ...(await loopback.api.store.listJobs('completed')),
    ].filter((j) => j.accountId === accountId);
    expect(jobs.map((j) => j.id)).toEqual([job.id]);
    // 20 addresses at 2 credits, once.
    expect((await loopback.api.store.balance(accountId)).used).toBe(40);
  });
});

describe('results streamed through faults', () => {
  let api: Client & { waited: number[] };
  let jobId: string;
  const emails = Array.from({ length: 600 }, (_, i) => `user${i}@domain${i % 7}.org`);
  beforeAll(async () => {
    ({ api } = await through());
    const job = await api.submitBatch(emails, { method: 'quick' });
    await api.waitForBatch(job.id);
    jobId = job.id;
  });
  const collect = async (client: Client = api) => {
    const records: BatchRecord[] = [];
    const error = await (async () => {
      for await (const record of client.batchResults(jobId)) records.push(record);
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    return { records, error };
  };
  const results = (request: IncomingMessage) => request.url?.includes('/results') === true;

  it('a reset mid-results: reopened, every record once, in order', async () => {
    first(2, { kind: 'cut-body', bytes: 40_000 }, results);
    const { records, error } = await collect();
    expect(error).toBeUndefined();
    expect(records.map((r) => r.email)).toEqual(emails);
    expect(proxy.seen.filter((s) => results({ url: s.url } as IncomingMessage))).toHaveLength(3);
  });

  it('reset every time: a NetworkError after maxRetries, the records before it each once', async () => {
    proxy.plan((request) =>
      results(request) ? { kind: 'cut-body', bytes: 40_000 } : { kind: 'pass' },
    );
    const { records, error } = await collect();
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ code: 'connection_failed' });
    expect(records.length).toBeGreaterThan(0);
    expect(records.map((r) => r.email)).toEqual(emails.slice(0, records.length));
    // The first try and three retries.
    expect(proxy.seen).toHaveLength(4);
  });

  it('a download that stalls mid-way ends in a timeout, not a wait without end', async () => {
    const { secret } = await loopback.key();
    const impatient = testClient(proxy.url, secret, { timeoutMs: 300, maxRetries: 1 });
    proxy.plan(() => ({
      kind: 'raw',
      data: 'HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n',
      end: 'hang',
    }));
    const { records, error } = await collect(impatient);
    expect(records).toEqual([]);
    expect(error).toMatchObject({ status: 0, code: 'timeout' });
    expect(proxy.seen).toHaveLength(2);
  });

  it('a line without end is refused at maxRecordBytes, not held', async () => {
    proxy.plan(() => ({ kind: 'flood', bytes: 64 * 1024 * 1024 }));
    const before = flooded.written;
    const records: BatchRecord[] = [];
    const error = await (async () => {
      for await (const record of api.batchResults(jobId, { maxRecordBytes: 100_000 })) {
        records.push(record);
      }
    })().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'invalid_response' });
    expect(proxy.seen).toHaveLength(1);
    // It stopped reading: far less than the 64 MB went out.
    expect(flooded.written - before).toBeLessThan(32 * 1024 * 1024);
  });
});

describe('answers that are not the API', () => {
  let other: Server;
  let otherUrl: string;
  const reachedOther: IncomingMessage['headers'][] = [];
  beforeAll(async () => {
    other = createServer((request, response) => {
      reachedOther.push(request.headers);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => other.close(resolve));
  });

  it('a redirect to another origin: refused, not followed, the key never sent there', async () => {
    const { api } = await through();
    for (const status of [301, 302, 307, 308]) {
      proxy.plan(() => ({
        kind: 'answer',
        status,
        headers: { location: `${otherUrl}/v1/account` },
      }));
      const error = await rejection(api.account());
      expect(error).toMatchObject({ status: 0, code: 'redirect' });
      expect(error.message).toContain(otherUrl);
    }
    proxy.plan(() => ({
      kind: 'answer',
      status: 307,
      headers: { location: `${otherUrl}/v1/verify` },
    }));
    await rejection(api.submitBatch(['a@example.org']));
    expect(reachedOther).toEqual([]);
    // Not retried either: one request per call.
    expect(proxy.seen).toHaveLength(5);
  });

  it('garbage: an invalid_response, not retried', async () => {
    const { api } = await through();
    for (const body of ['not json at all', '[1,2,3]', '"text"', 'null', '\u00ff\u00fe']) {
      proxy.seen.length = 0;
      proxy.plan(() => ({
        kind: 'raw',
        data: `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        end: 'end',
      }));
      expect(await rejection(api.account())).toMatchObject({ status: 0, code: 'invalid_response' });
      expect(proxy.seen).toHaveLength(1);
    }
  });

  it('a truncated body (shorter than announced): retried as a broken connection, then typed', async () => {
    const { api } = await through({ maxRetries: 1 });
    proxy.plan(() => ({
      kind: 'raw',
      data: 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"email":"x',
      end: 'end',
    }));
    expect(await rejection(api.account())).toMatchObject({ status: 0, code: 'connection_failed' });
    expect(proxy.seen).toHaveLength(2);
  });

  it('a body far larger than announced or allowed is never held', async () => {
    const { api } = await through({ maxResponseBytes: 256 * 1024 });
    let before = flooded.written;
    // Announced small, sent huge: only the announced bytes are read (and they are no JSON).
    proxy.plan(() => ({ kind: 'flood', bytes: 64 * 1024 * 1024, contentLength: 100 }));
    expect(await rejection(api.account())).toMatchObject({ code: 'invalid_response' });
    // Not announced (read until close): refused past maxResponseBytes.
    proxy.plan(() => ({ kind: 'flood', bytes: 64 * 1024 * 1024 }));
    expect(await rejection(api.account())).toMatchObject({ code: 'invalid_response' });
    expect(flooded.written - before).toBeLessThan(64 * 1024 * 1024);
    // Announced huge: refused on the header, before a byte of it is read.
    before = flooded.written;
    proxy.plan(() => ({ kind: 'flood', bytes: 64 * 1024 * 1024, contentLength: 10 * 1024 ** 3 }));
    expect(await rejection(api.account())).toMatchObject({ code: 'invalid_response' });
    expect(flooded.written - before).toBeLessThan(32 * 1024 * 1024);
  });

  it('silence: a timeout per attempt, retried, then typed', async () => {
    const { api } = await through({ timeoutMs: 200, maxRetries: 1 });
    proxy.plan(() => ({ kind: 'hang' }));
    expect(await rejection(api.account())).toMatchObject({ status: 0, code: 'timeout' });
    expect(proxy.seen).toHaveLength(2);
  });

  it("a caller's abort ends a Retry-After wait at once", async () => {
    const { secret } = await loopback.key();
    const controller = new AbortController();
    const { createClient } = await import('../../src/client.js');
    const api = createClient({
      baseUrl: proxy.url,
      apiKey: secret,
      signal: controller.signal,
      sleep: (ms, signal) => delay(ms, signal),
    });
    proxy.plan(() => rateLimited({ 'retry-after': '30' }));
    const call = api.account();
    await delay(50, undefined);
    controller.abort(new Error('stop'));
    await expect(call).rejects.toThrow('stop');
  });
});

describe('waitForBatch and the rate limit', () => {
  it('waits for the reset when no request is left, then polls on', async () => {
    const { api } = await through({ now: () => 1_000_000_000_000 });
    const job = await api.submitBatch(['a@example.org']);
    await api.waitForBatch(job.id);
    // Now the same job, answered "processing, none left until reset + 5 s" once.
    const status = JSON.stringify({
      id: job.id,
      status: 'processing',
      total_emails: 1,
      processed: 0,
      percent_complete: 0,
      valid: 0,
      invalid: 0,
      risky: 0,
    });
    first(1, {
      kind: 'answer',
      status: 200,
      body: status,
      headers: {
        'x-ratelimit-limit': '300',
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(1_000_000_000 + 5),
      },
    });
    api.waited.length = 0;
    expect((await api.waitForBatch(job.id)).status).toBe('completed');
    expect(api.waited).toEqual([5000]);
  });
});
