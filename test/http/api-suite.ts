import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HandlerOptions } from '../../src/http/handler.js';
import { OPENAPI_DOCUMENT } from '../../src/http/openapi.js';
import { ROUTES, type RouteSpec } from '../../src/http/routes.js';
import { toCompact, toShapeB } from '../../src/format/shapes.js';
import { createMemoryWebhookSender } from '../../src/testing.js';
import type { Service } from '../../src/service/service.js';
import { apiFixture, type ApiFixture } from '../helpers/service.js';
import { bearer, DIRECT_IP, type Client, type nodeClient } from './helpers.js';

type NodeClient = Awaited<ReturnType<typeof nodeClient>>;

/** Makes a client of one kind (the handler called directly, or mailverdict/node over HTTP). */
export type ClientFactory = (service: Service, options?: HandlerOptions) => Promise<Client>;

/**
 * Every endpoint and error of the /v1 API, run once through the handler and once over real
 * HTTP (test/http/handler.test.ts, test/integration/http.test.ts). Every answer is checked
 * against the OpenAPI document by the client (helpers.ts: expectDocumented).
 */
export function apiSuite(kind: string, makeClient: ClientFactory): void {
  describe(`/v1 API (${kind})`, () => {
    let api: ApiFixture;
    let client: Client;
    let secret: string;
    let accountId: string;
    const opened: Client[] = [];
    /** The client IP the server sees: the socket's over HTTP, the one we report directly. */
    const peer = () => (client.name === 'node' ? '127.0.0.1' : DIRECT_IP);
    const open = async (options?: HandlerOptions) => {
      const made = await makeClient(api.service, options);
      opened.push(made);
      return made;
    };

    beforeAll(async () => {
      api = await apiFixture();
      client = await open();
      ({ secret, accountId } = await api.account());
    });
    afterAll(async () => {
      for (const made of opened) await made.close();
    });

    /** What a bad request must leave as it was: filters, balances, ledger. */
    async function snapshot(id = accountId) {
      const [filters, account, ledger] = await Promise.all([
        api.service.listFilters({ accountId: id }, { perPage: 100 }),
        api.service.admin.getAccount(id),
        api.service.admin.ledger(id),
      ]);
      return { filters, credits: account.credits, ledger };
    }

    describe('GET /v1/verify', () => {
      it('answers shape A compact with the rate-limit headers', async () => {
        const reply = await client.call('/v1/verify?email=deliverable@example.com', {
          headers: bearer(secret),
        });
        expect(reply.status).toBe(200);
        expect(reply.body).toEqual({
          email: 'deliverable@example.com',
          state: 'deliverable',
          score: expect.any(Number),
          reason: 'accepted_email',
        });
        expect(reply.headers.get('x-ratelimit-limit')).toBe('300');
        expect(Number(reply.headers.get('x-ratelimit-remaining'))).toBeLessThan(300);
        const reset = Number(reply.headers.get('x-ratelimit-reset'));
        expect(Number.isInteger(reset)).toBe(true);
        expect(reset).toBeGreaterThan(Date.now() / 1000);
        expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 60);
      });

      it('answers the detailed shape, and fields of it', async () => {
        const detailed = await client.call(
          '/v1/verify?email=undeliverable@example.com&detailed=true',
          { headers: bearer(secret) },
        );
        expect(detailed.status).toBe(200);
        expect(detailed.body).toMatchObject({
          state: 'undeliverable',
          reason: 'rejected_email',
          domain: 'example.com',
          user: 'undeliverable',
        });
        const picked = await client.call('/v1/verify?email=risky@example.com&fields=state,domain', {
          headers: bearer(secret),
        });
        expect(picked.body).toEqual({
          email: 'risky@example.com',
          state: 'risky',
          domain: 'example.com',
        });
        const unknown = await client.call(
          '/v1/verify?email=risky@example.com&fields=state,colour',
          {
            headers: bearer(secret),
          },
        );
        expect(unknown.status).toBe(400);
        expect(unknown.body).toMatchObject({ error: 'invalid_request', field: 'fields' });
        expect(unknown.body.allowed).toContain('mx_record');
      });

      it('answers shape B for a form B parameter, echoing site_source', async () => {
        const reply = await client.call(
          '/v1/verify?email=alice@example.org&smtp=false&site_source=signup',
          { headers: bearer(secret) },
        );
        expect(reply.status).toBe(200);
        expect(reply.body).toMatchObject({
          email: 'alice@example.org',
          status: 'valid',
          site_source: 'signup',
          risk_factors: expect.any(Array),
        });
        // smtp=true (the default) on a server that cannot probe: a clear 400, nothing charged.
        const before = await snapshot();
        const smtp = await client.call('/v1/verify?email=bob@example.org&site_source=x', {
          headers: bearer(secret),
        });
        expect(smtp.status).toBe(400);
        expect(smtp.body).toMatchObject({ error: 'invalid_request', field: 'smtp' });
        const formA = await client.call('/v1/verify?email=bob@example.org&method=smtp', {
          headers: bearer(secret),
        });
        expect(formA.body).toMatchObject({ error: 'invalid_request', field: 'method' });
        expect((await snapshot()).credits).toEqual(before.credits);
        // Test addresses answer every method, the smtp one too, offline.
        const test = await client.call('/v1/verify?email=risky@example.com&smtp=true', {
          headers: bearer(secret),
        });
        expect(test.body).toMatchObject({ status: 'valid', deliverability: 'risky' });
      });

      it('charges a real address once per Idempotency-Key and refuses its reuse', async () => {
        const headers = bearer(secret, { 'idempotency-key': `idem-${kind}` });
        const before = await snapshot();
        const first = await client.call('/v1/verify?email=carol@example.org&method=quick', {
          headers,
        });
        const again = await client.call('/v1/verify?email=carol@example.org&method=quick', {
          headers,
        });
        expect(first.status).toBe(200);
        expect(again.body).toEqual(first.body);
        const after = await snapshot();
        expect(after.credits.used - before.credits.used).toBe(1);
        const other = await client.call('/v1/verify?email=dave@example.org&method=quick', {
          headers,
        });
        expect(other.status).toBe(409);
        expect(other.body.error).toBe('idempotency_conflict');
      });

      it('refuses a verification the account cannot pay for with 402', async () => {
        const poor = await api.account({ credits: 0 });
        const reply = await client.call('/v1/verify?email=erin@example.org', {
          headers: bearer(poor.secret),
        });
        expect(reply.status).toBe(402);
        expect(reply.body).toMatchObject({
          error: 'insufficient_credits',
          needed: 2,
          available: 0,
        });
        expect(reply.headers.get('x-ratelimit-limit')).toBe('300');
      });

      it.each([
        ['/v1/verify', 'email'],
        ['/v1/verify?email=', 'email'],
        ['/v1/verify?email=a@example.org&email=b@example.org', 'email'],
        ['/v1/verify?email=a@example.org&colour=red', 'colour'],
        ['/v1/verify?email=a@example.org&method=deep', 'method'],
        ['/v1/verify?email=a@example.org&detailed=maybe', 'detailed'],
        ['/v1/verify?email=a@example.org&method=quick&smtp=false', 'method'],
        ['/v1/verify?email=a@example.org&detailed=false&fields=state', 'fields'],
        [`/v1/verify?email=a@example.org&site_source=${'s'.repeat(600)}`, 'site_source'],
        [`/v1/verify?email=${'a'.repeat(9000)}@example.org`, 'query'],
      ])('refuses %s naming %s, changing nothing', async (path, field) => {
        const before = await snapshot();
        const reply = await client.call(path, { headers: bearer(secret) });
        expect(reply.status).toBe(400);
        expect(reply.body).toMatchObject({ error: 'invalid_request', field });
        expect(await snapshot()).toEqual(before);
      });

      it('judges any string that arrives intact as email, as the library does, and charges it', async () => {
        const own = await api.account();
        const used = async () => (await api.service.admin.getAccount(own.accountId)).credits.used;
        const strings = [
          'a\u0001b@example.org',
          'a\u0000b@example.org',
          'a\r\nb@example.org',
          `${'a'.repeat(2000)}@example.org`, // longer than any address
          ' ',
          '\uFFFD@example.org', // a U+FFFD the client did send: a symbol RFC 6531 admits
        ];
        for (const email of strings) {
          const query = `email=${encodeURIComponent(email)}`;
          const before = await used();
          const a = await client.call(`/v1/verify?${query}&method=quick`, {
            headers: bearer(own.secret),
          });
          expect(a.status, JSON.stringify(email)).toBe(200);
          expect(a.body).toEqual(
            toCompact(api.service.engine.verifySync(email, { method: 'quick' })),
          );
          expect(a.body.reason).toBe(
            email.startsWith('\uFFFD') ? 'accepted_email' : 'invalid_email',
          );
          expect((await used()) - before).toBe(1);
          const b = await client.call(`/v1/verify?${query}&smtp=false`, {
            headers: bearer(own.secret),
          });
          expect(b.status).toBe(200);
          const standard = api.service.engine.verifySync(email, { method: 'standard' });
          expect(b.body).toEqual(toShapeB({ ...standard, duration: b.body.duration }, undefined));
          expect((await used()) - before).toBe(3);
        }
      });

      it.each([
        ['a lone surrogate', 'email=%ED%A0%80%40example.org', 'email'],
        ['a cut sequence', 'email=a%C3@example.org', 'email'],
        ['an overlong encoding', 'email=%C0%AF@example.org', 'email'],
        [
          'a lone surrogate in form B',
          'email=a%40example.org&site_source=%ED%A0%80&smtp=false',
          'site_source',
        ],
      ])(
        'refuses %s (not UTF-8 once percent-decoded) naming the parameter, charging nothing',
        async (_n, query, field) => {
          const before = await snapshot();
          const reply = await client.call(`/v1/verify?${query}`, { headers: bearer(secret) });
          expect(reply.status).toBe(400);
          expect(reply.body).toMatchObject({ error: 'invalid_request', field });
          expect(reply.headers.get('x-ratelimit-limit')).toBe('300');
          expect(await snapshot()).toEqual(before);
        },
      );

      it('applies the account filters', async () => {
        const { secret: own } = await api.account();
        const created = await client.call('/v1/filters', {
          method: 'POST',
          headers: bearer(own, { 'content-type': 'application/json' }),
          body: JSON.stringify({
            value: 'blocked.example',
            filter_type: 'domain',
            action: 'block',
          }),
        });
        expect(created.status).toBe(201);
        const reply = await client.call('/v1/verify?email=x@blocked.example', {
          headers: bearer(own),
        });
        expect(reply.body).toMatchObject({ state: 'undeliverable', reason: 'blocked_by_filter' });
      });
    });

    describe('authentication', () => {
      it('takes the key as a bearer header or as api_key, and both only if they agree', async () => {
        const path = '/v1/verify?email=deliverable@example.com';
        expect((await client.call(`${path}&api_key=${secret}`)).status).toBe(200);
        expect(
          (await client.call(`${path}&api_key=${secret}`, { headers: bearer(secret) })).status,
        ).toBe(200);
        const { secret: other } = await api.account();
        const before = await snapshot();
        const mixed = await client.call(`${path}&api_key=${other}`, { headers: bearer(secret) });
        expect(mixed.status).toBe(400);
        expect(mixed.body).toMatchObject({ error: 'invalid_request', field: 'api_key' });
        expect(await snapshot()).toEqual(before);
      });

      it('answers 401 without a key or with an unknown one, with no rate-limit headers', async () => {
        for (const headers of [
          {},
          bearer('mv_sk_' + 'x'.repeat(32)),
          { authorization: 'Basic abc' },
        ]) {
          const reply = await client.call('/v1/account', { headers });
          expect(reply.status).toBe(401);
          expect(reply.body.error).toBe('unauthorized');
          expect(reply.headers.get('x-ratelimit-limit')).toBeNull();
        }
      });

      it('stops a revoked key', async () => {
        const { key, secret: revoked } = await api.service.admin.createKey(accountId);
        await api.service.admin.revokeKey(accountId, key.id);
        expect((await client.call('/v1/account', { headers: bearer(revoked) })).status).toBe(401);
      });
    });

    describe('rate limits', () => {
      it('puts X-RateLimit-* on every answer to an identified key, refusals included', async () => {
        const own = await api.account({ credits: 0 });
        const headers = bearer(own.secret);
        const posted = bearer(own.secret, { 'content-type': 'application/json' });
        const answers = [
          await client.call('/v1/verify?email=deliverable@example.com', { headers }),
          await client.call('/v1/verify?email=x@example.org', { headers }), // 402
          await client.call('/v1/account', { headers }),
          await client.call('/v1/filters', { headers }),
          await client.call('/v1/filters', {
            method: 'POST',
            headers: posted,
            body: JSON.stringify({
              value: 'not a domain!',
              filter_type: 'domain',
              action: 'block',
            }),
          }), // 400 from the service, after the key
          await client.call('/v1/filters/flt_missing', { method: 'DELETE', headers }), // 404
          await client.call('/v1/verify/batch_missing', { headers }), // 404
          await client.call('/v1/verify', {
            method: 'POST',
            headers: posted,
            body: JSON.stringify({ emails: ['x@example.org'] }),
          }), // 402
        ];
        expect(answers.map((answer) => answer.status)).toEqual([
          200, 402, 200, 200, 400, 404, 404, 402,
        ]);
        const remaining = answers.map((answer) =>
          Number(answer.headers.get('x-ratelimit-remaining')),
        );
        for (const answer of answers) expect(answer.headers.get('x-ratelimit-limit')).toBe('300');
        // Each request counted once, in order.
        expect(remaining).toEqual(remaining.map((_, i) => 299 - i));
      });

      it('puts them on each kind of refusal, counting none refused before the key was read', async () => {
        const own = await api.account({ credits: 0 });
        const headers = bearer(own.secret);
        const { secret: elsewhere } = await api.service.admin.createKey(own.accountId, {
          allowedIps: ['203.0.113.0/24'],
        });
        const call = (path: string, init: { headers?: Record<string, string> } = {}) =>
          client.call(path, { headers, ...init });
        const answers = [
          ['counted', await call('/v1/account')],
          ['uncounted', await call('/v1/verify?email=a@example.org&fields=state,colour')],
          ['uncounted', await call('/v1/verify?email=%ED%A0%80%40example.org')],
          ['uncounted', await call('/v1/verify?email=a@example.org&colour=red')],
          ['uncounted', await call(`/v1/verify?email=a@example.org&api_key=${own.secret}&x=1`)],
          ['uncounted', await call('/v1/nothing-here')],
          ['counted', await call('/v1/verify?email=x@example.org')], // 402
          ['counted', await call('/v1/verify/batch_missing')], // 404
          [
            'counted',
            await call('/v1/verify?email=deliverable@example.com', {
              headers: bearer(own.secret, { 'idempotency-key': `figures-${kind}` }),
            }),
          ],
          [
            'counted',
            await call('/v1/verify?email=risky@example.com', {
              headers: bearer(own.secret, { 'idempotency-key': `figures-${kind}` }),
            }),
          ], // 409
        ] as const;
        expect(answers.map(([, answer]) => answer.status)).toEqual([
          200, 400, 400, 400, 400, 404, 402, 404, 200, 409,
        ]);
        let remaining = 300;
        for (const [counting, answer] of answers) {
          if (counting === 'counted') remaining -= 1;
          const where = `${answer.status} ${answer.text}`;
          expect(answer.headers.get('x-ratelimit-limit'), where).toBe('300');
          expect(answer.headers.get('x-ratelimit-remaining'), where).toBe(String(remaining));
          expect(Number(answer.headers.get('x-ratelimit-reset')), where).toBeGreaterThan(0);
        }
        // The allow-list refuses a known key from elsewhere: its figures, the request uncounted.
        for (let i = 0; i < 2; i++) {
          const refused = await client.call('/v1/account', { headers: bearer(elsewhere) });
          expect(refused.status).toBe(403);
          expect(refused.headers.get('x-ratelimit-limit')).toBe('300');
          expect(refused.headers.get('x-ratelimit-remaining')).toBe('300');
        }
        // Past the limit, a malformed request is told the refusing figures too.
        const free = await api.account({ plan: 'free' });
        for (let i = 0; i < 10; i++)
          await client.call('/v1/account', { headers: bearer(free.secret) });
        const over = await client.call('/v1/account', { headers: bearer(free.secret) });
        const bad = await client.call('/v1/verify?email=a@example.org&fields=colour', {
          headers: bearer(free.secret),
        });
        expect([over.status, bad.status]).toEqual([429, 400]);
        for (const answer of [over, bad]) {
          expect(answer.headers.get('x-ratelimit-limit')).toBe('10');
          expect(answer.headers.get('x-ratelimit-remaining')).toBe('0');
        }
        // Without a key nothing is identified: no figures.
        const anonymous = await client.call('/v1/verify?email=a@example.org&fields=colour');
        expect(anonymous.status).toBe(400);
        expect(anonymous.headers.get('x-ratelimit-limit')).toBeNull();
      });

      it('admits the plan per minute, then 429 with Retry-After and the spec body', async () => {
        const free = await api.account({ plan: 'free' });
        const remaining: string[] = [];
        for (let i = 0; i < 10; i++) {
          const reply = await client.call('/v1/account', { headers: bearer(free.secret) });
          expect(reply.status).toBe(200);
          remaining.push(reply.headers.get('x-ratelimit-remaining') ?? '');
        }
        expect(remaining).toEqual(['9', '8', '7', '6', '5', '4', '3', '2', '1', '0']);
        const refused = await client.call('/v1/verify?email=deliverable@example.com', {
          headers: bearer(free.secret),
        });
        expect(refused.status).toBe(429);
        expect(refused.body).toEqual({
          error: 'rate_limit_exceeded',
          message: expect.any(String),
          retry_after: expect.any(Number),
        });
        const retryAfter = Number(refused.headers.get('retry-after'));
        expect(retryAfter).toBe(refused.body.retry_after);
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(60);
        expect(refused.headers.get('x-ratelimit-limit')).toBe('10');
        expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
        expect(Number(refused.headers.get('x-ratelimit-reset'))).toBeGreaterThanOrEqual(
          Math.floor(Date.now() / 1000),
        );
      });
    });

    describe('private keys: IP allow-lists', () => {
      it('admits the client IP the host reports and refuses others', async () => {
        const { key, secret: limited } = await api.service.admin.createKey(accountId, {
          allowedIps: [peer()],
        });
        expect((await client.call('/v1/account', { headers: bearer(limited) })).status).toBe(200);
        await api.service.admin.updateKey(accountId, key.id, { allowedIps: ['203.0.113.0/24'] });
        const refused = await client.call('/v1/account', { headers: bearer(limited) });
        expect(refused.status).toBe(403);
        expect(refused.body.error).toBe('forbidden');
      });

      it('reads X-Forwarded-For only from a trusted proxy', async () => {
        const { secret: limited } = await api.service.admin.createKey(accountId, {
          allowedIps: ['203.0.113.0/24'],
        });
        const forwarded = bearer(limited, { 'x-forwarded-for': '203.0.113.9' });
        // Not behind a configured proxy: the header is anyone's to write, and is ignored.
        expect((await client.call('/v1/account', { headers: forwarded })).status).toBe(403);
        const proxied = await open({ trustedProxies: [peer()] });
        expect((await proxied.call('/v1/account', { headers: forwarded })).status).toBe(200);
        // A client's own X-Forwarded-For to the left of the proxy's entry is not believed.
        const spoofed = bearer(limited, { 'x-forwarded-for': '203.0.113.9, 192.0.2.1' });
        expect((await proxied.call('/v1/account', { headers: spoofed })).status).toBe(403);
        // A proxy elsewhere is not ours.
        const elsewhere = await open({ trustedProxies: ['192.0.2.0/24'] });
        expect((await elsewhere.call('/v1/account', { headers: forwarded })).status).toBe(403);
      });
    });

    describe('public keys and CORS', () => {
      let publicKey: string;
      beforeAll(async () => {
        publicKey = await api.publicKey(accountId, ['app.example.org']);
      });

      it('answers the preflight of GET /v1/verify', async () => {
        const reply = await client.call('/v1/verify', {
          method: 'OPTIONS',
          headers: {
            origin: 'https://app.example.org',
            'access-control-request-method': 'GET',
            'access-control-request-headers': 'authorization',
          },
        });
        expect(reply.status).toBe(204);
        expect(reply.headers.get('access-control-allow-origin')).toBe('https://app.example.org');
        expect(reply.headers.get('access-control-allow-methods')).toBe('GET');
        expect(reply.headers.get('access-control-allow-headers')).toContain('authorization');
        // Public keys may only GET a verify: a preflight for anything else is not granted.
        for (const [path, method] of [
          ['/v1/verify', 'POST'],
          ['/v1/account', 'GET'],
        ] as const) {
          const refused = await client.call(path, {
            method: 'OPTIONS',
            headers: { origin: 'https://app.example.org', 'access-control-request-method': method },
          });
          expect(refused.status).toBe(204);
          expect(refused.headers.get('access-control-allow-origin')).toBeNull();
        }
      });

      it('grants no page anything with cors: false', async () => {
        const closed = await open({ cors: false });
        const headers = bearer(publicKey, { origin: 'https://app.example.org' });
        const reply = await closed.call('/v1/verify?email=deliverable@example.com', { headers });
        expect(reply.status).toBe(200);
        expect(reply.headers.get('access-control-allow-origin')).toBeNull();
        const preflight = await closed.call('/v1/verify', {
          method: 'OPTIONS',
          headers: { origin: 'https://app.example.org', 'access-control-request-method': 'GET' },
        });
        expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
      });

      it('lets a trusted page read its verdict, and refuses an untrusted one with 403', async () => {
        const path = '/v1/verify?email=deliverable@example.com';
        const trusted = await client.call(path, {
          headers: bearer(publicKey, { origin: 'https://app.example.org' }),
        });
        expect(trusted.status).toBe(200);
        expect(trusted.headers.get('access-control-allow-origin')).toBe('https://app.example.org');
        expect(trusted.headers.get('access-control-expose-headers')).toContain(
          'x-ratelimit-remaining',
        );
        for (const origin of ['https://evil.example.net', 'https://example.org', 'null']) {
          const refused = await client.call(path, { headers: bearer(publicKey, { origin }) });
          expect(refused.status).toBe(403);
          expect(refused.body.error).toBe('forbidden');
          expect(refused.headers.get('access-control-allow-origin')).toBeNull();
        }
        const noOrigin = await client.call(path, { headers: bearer(publicKey) });
        expect(noOrigin.status).toBe(403);
        const byReferer = await client.call(path, {
          headers: bearer(publicKey, { referer: 'https://app.example.org/signup' }),
        });
        expect(byReferer.status).toBe(200);
      });

      it('refuses Origin: null (a sandboxed iframe, a data: page) whatever its Referer, and never grants it', async () => {
        const sandboxed = await client.call('/v1/verify?email=deliverable@example.com', {
          headers: bearer(publicKey, { origin: 'null', referer: 'https://app.example.org/' }),
        });
        expect(sandboxed.status).toBe(403);
        expect(sandboxed.headers.get('access-control-allow-origin')).toBeNull();
        const preflight = await client.call('/v1/verify', {
          method: 'OPTIONS',
          headers: { origin: 'null', 'access-control-request-method': 'GET' },
        });
        expect(preflight.status).toBe(204);
        expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
      });

      it('trusts a page served over http only where its domain is listed with http://', async () => {
        const path = '/v1/verify?email=deliverable@example.com';
        for (const page of [
          { origin: 'http://app.example.org' },
          { referer: 'http://app.example.org/' },
        ]) {
          const refused = await client.call(path, { headers: bearer(publicKey, page) });
          expect(refused.status).toBe(403);
          expect(refused.headers.get('access-control-allow-origin')).toBeNull();
        }
        const own = await api.account();
        const plain = await api.publicKey(own.accountId, ['http://app.example.org']);
        for (const origin of ['http://app.example.org', 'https://app.example.org']) {
          const admitted = await client.call(path, { headers: bearer(plain, { origin }) });
          expect(admitted.status).toBe(200);
          expect(admitted.headers.get('access-control-allow-origin')).toBe(origin);
        }
      });

      it('keeps public keys to single verify', async () => {
        const headers = bearer(publicKey, { origin: 'https://app.example.org' });
        for (const path of ['/v1/account', '/v1/filters']) {
          const reply = await client.call(path, { headers });
          expect(reply.status).toBe(403);
          expect(reply.headers.get('access-control-allow-origin')).toBeNull();
        }
      });

      it('limits one visitor to 10 a day, readable by the trusted page', async () => {
        const own = await api.account();
        const key = await api.publicKey(own.accountId, ['*.example.org']);
        const headers = bearer(key, { origin: 'https://shop.example.org' });
        for (let i = 0; i < 10; i++) {
          const ok = await client.call('/v1/verify?email=deliverable@example.com', { headers });
          expect(ok.status).toBe(200);
        }
        const refused = await client.call('/v1/verify?email=deliverable@example.com', { headers });
        expect(refused.status).toBe(429);
        expect(refused.headers.get('access-control-allow-origin')).toBe('https://shop.example.org');
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(60);
      });
    });

    describe('filters', () => {
      const json = (more: Record<string, string> = {}) =>
        bearer(secret, { 'content-type': 'application/json', ...more });

      it('creates, lists, pages and deletes filters', async () => {
        const { secret: own } = await api.account();
        const headers = bearer(own, { 'content-type': 'application/json' });
        const made = [];
        for (const [value, filter_type] of [
          ['Spam@Example.net', 'email'],
          ['bücher.example', 'domain'],
          ['192.0.2.0/24', 'ip_address'],
        ]) {
          const reply = await client.call('/v1/filters', {
            method: 'POST',
            headers,
            body: JSON.stringify({ value, filter_type, action: 'block', reason: 'test' }),
          });
          expect(reply.status).toBe(201);
          made.push(reply.body);
        }
        expect(made.map((filter) => filter.value)).toEqual([
          'spam@example.net',
          'xn--bcher-kva.example',
          '192.0.2.0/24',
        ]);
        const duplicate = await client.call('/v1/filters', {
          method: 'POST',
          headers,
          body: JSON.stringify({
            value: 'xn--bcher-kva.example',
            filter_type: 'domain',
            action: 'allow',
          }),
        });
        expect(duplicate.status).toBe(409);
        expect(duplicate.body.error).toBe('conflict');

        const list = await client.call('/v1/filters?per_page=2&page=1', { headers: bearer(own) });
        expect(list.body).toMatchObject({ total: 3, page: 1, per_page: 2 });
        expect(list.body.filters).toHaveLength(2);
        const domains = await client.call('/v1/filters?filter_type=domain', {
          headers: bearer(own),
        });
        expect(domains.body.filters.map((f: { id: string }) => f.id)).toEqual([made[1].id]);

        const removed = await client.call(`/v1/filters/${made[0].id}`, {
          method: 'DELETE',
          headers: bearer(own),
        });
        expect(removed.body).toEqual({ id: made[0].id, deleted: true });
        const again = await client.call(`/v1/filters/${made[0].id}`, {
          method: 'DELETE',
          headers: bearer(own),
        });
        expect(again.status).toBe(404);
        // Another account's filter is not found, not deleted.
        const foreign = await client.call(`/v1/filters/${made[1].id}`, {
          method: 'DELETE',
          headers: bearer(secret),
        });
        expect(foreign.status).toBe(404);
      });

      it.each([
        ['malformed JSON', '{"value": ', {}, 400, 'invalid_request'],
        ['a JSON array', '[]', {}, 400, 'invalid_request'],
        ['not UTF-8', new Uint8Array([0x7b, 0xff, 0x7d]), {}, 400, 'invalid_request'],
        [
          'an unknown field',
          '{"value":"a.example","filter_type":"domain","action":"block","colour":1}',
          {},
          400,
          'invalid_request',
        ],
        [
          'a wrong type',
          '{"value":42,"filter_type":"domain","action":"block"}',
          {},
          400,
          'invalid_request',
        ],
        [
          'an unknown filter_type',
          '{"value":"a.example","filter_type":"host","action":"block"}',
          {},
          400,
          'invalid_request',
        ],
        [
          'a bad value',
          '{"value":"not a domain!","filter_type":"domain","action":"block"}',
          {},
          400,
          'invalid_request',
        ],
        [
          'a form body',
          'value=a.example',
          { 'content-type': 'application/x-www-form-urlencoded' },
          415,
          'unsupported_media_type',
        ],
        ['no content type', '{}', { 'content-type': '' }, 415, 'unsupported_media_type'],
        [
          'a Latin-1 charset',
          '{}',
          { 'content-type': 'application/json; charset=latin1' },
          415,
          'unsupported_media_type',
        ],
      ] as const)('refuses %s, changing nothing', async (_name, body, headers, status, error) => {
        const before = await snapshot();
        const reply = await client.call('/v1/filters', {
          method: 'POST',
          headers: json(headers),
          body: typeof body === 'string' ? body : new Uint8Array(body),
        });
        expect(reply.status).toBe(status);
        expect(reply.body.error).toBe(error);
        expect(await snapshot()).toEqual(before);
      });

      it.each(['/v1/filters', '/v1/verify'])(
        'refuses a 20 MB body to %s with 413 without holding it',
        async (path) => {
          const before = await snapshot();
          const big = JSON.stringify({
            emails: ['a@example.org'],
            value: 'a'.repeat(20 * 1024 * 1024),
          });
          const reply = await client.call(path, { method: 'POST', headers: json(), body: big });
          expect(reply.status).toBe(413);
          expect(reply.body.error).toBe('payload_too_large');
          expect(await snapshot()).toEqual(before);
        },
      );

      it('refuses a streamed body once it passes the cap', async () => {
        const small = await open({ maxBodyBytes: 1024 });
        let sent = 0;
        const chunk = new TextEncoder().encode('x'.repeat(4096));
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            // 64 MB if nobody stops reading: the server must stop after the first KB.
            if (sent >= 16_384) controller.close();
            else {
              sent++;
              controller.enqueue(chunk);
            }
          },
        });
        const reply = await small.call('/v1/filters', { method: 'POST', headers: json(), body });
        expect(reply.status).toBe(413);
        expect(sent).toBeLessThan(16_384);
      });

      it.each(['/v1/filters', '/v1/verify'])(
        'reads no byte of a body to %s before its key is admitted',
        async (path) => {
          const { accountId: owner } = await api.account();
          const publicKey = await api.publicKey(owner, ['shop.example']);
          const { secret: free } = await api.account({ plan: 'free' });
          // The free plan's 10 a minute, spent: the next request is over its limit.
          for (let i = 0; i < 10; i++) await client.call('/v1/account', { headers: bearer(free) });
          const { secret: elsewhere } = await api.service.admin.createKey(owner, {
            allowedIps: ['203.0.113.0/24'],
          });
          // Each refusal, and whether the key is known (its answer then carries its figures).
          const refusals = [
            [{}, 401, false],
            [bearer(`mv_sk_${'0'.repeat(32)}`), 401, false],
            [bearer(publicKey, { origin: 'https://shop.example' }), 403, true],
            [bearer(elsewhere), 403, true],
            [bearer(free), 429, true],
          ] as const;
          for (const [headers, status, known] of refusals) {
            let pulled = 0;
            // 16 MB of nested arrays if anyone reads it (and nothing queued before that).
            const body = new ReadableStream<Uint8Array>(
              {
                pull(controller) {
                  pulled++;
                  if (pulled > 256) controller.close();
                  else controller.enqueue(new TextEncoder().encode('['.repeat(65_536)));
                },
              },
              { highWaterMark: 0 },
            );
            const reply = await client.call(path, {
              method: 'POST',
              headers: { 'content-type': 'application/json', ...headers },
              body,
            });
            expect(reply.status).toBe(status);
            expect(reply.headers.get('x-ratelimit-limit') !== null).toBe(known);
            // Over HTTP the client sends what it likes; the handler itself never pulled.
            if (client.name === 'handler') expect(pulled).toBe(0);
          }
        },
      );

      it.each([
        ['nested deeper than 16 levels', `{"emails":${'['.repeat(100_000)}`, 'deeper than 16'],
        ['with 100,001 elements', `{"emails":[${'1,'.repeat(100_000)}1]}`, 'more than 100000'],
      ])('refuses a body %s with 400, changing nothing', async (_name, body, message) => {
        const before = await snapshot();
        for (const path of ['/v1/filters', '/v1/verify']) {
          const reply = await client.call(path, { method: 'POST', headers: json(), body });
          expect(reply.status).toBe(400);
          expect(reply.body).toMatchObject({ error: 'invalid_request', field: 'body' });
          expect(reply.body.message).toContain(message);
        }
        expect(await snapshot()).toEqual(before);
      });

      it('takes its JSON limits from the options', async () => {
        const strict = await open({ maxJsonDepth: 1, maxJsonElements: 3 });
        const batch = (emails: unknown) =>
          strict.call('/v1/filters', {
            method: 'POST',
            headers: json(),
            body: JSON.stringify({ value: emails, filter_type: 'domain', action: 'block' }),
          });
        expect((await batch('a.example')).status).toBe(201);
        expect((await batch(['a.example'])).body.message).toContain('deeper than 1 levels');
        const many = await strict.call('/v1/filters', {
          method: 'POST',
          headers: json(),
          body: '{"value":"b.example","filter_type":"domain","action":"block","reason":"x"}',
        });
        expect(many.body.message).toContain('more than 3 JSON elements');
      });

      it('refuses bytes that are not UTF-8 in any parameter of any operation, naming it, charging nothing', async () => {
        const before = await snapshot();
        let asked = 0;
        for (const route of Object.values(ROUTES) as RouteSpec[]) {
          for (const [method, operation] of Object.entries(route.operations)) {
            for (const parameter of operation.query ?? []) {
              // A lone surrogate, and a cut sequence: what URLSearchParams turns into U+FFFD.
              for (const bytes of ['%ED%A0%80', 'a%C3']) {
                const path = `${route.path.replace('{id}', 'batch_x')}?${parameter}=${bytes}`;
                const reply = await client.call(path, { method, headers: bearer(secret) });
                expect(reply.status, path).toBe(400);
                expect(reply.body, path).toMatchObject({
                  error: 'invalid_request',
                  field: parameter,
                });
                asked++;
              }
            }
          }
        }
        expect(asked).toBeGreaterThan(20);
        expect(await snapshot()).toEqual(before);
      });

      it.each([
        ['/v1/filters?page=abc', 'page'],
        ['/v1/filters?per_page=1000', 'per_page'],
        ['/v1/filters?page=0', 'page'],
        ['/v1/filters?filter_type=host', 'filter_type'],
        ['/v1/filters?page=1&page=2', 'page'],
      ])('refuses the list query %s', async (path, field) => {
        const reply = await client.call(path, { headers: bearer(secret) });
        expect(reply.status).toBe(400);
        expect(reply.body).toMatchObject({ error: 'invalid_request', field });
      });

      it.each(['..', '..%2Faccount', '%2e%2e%2f%2e%2e', 'a%00b', 'x'.repeat(200), '%E0%A4%A'])(
        'refuses the path id %#, changing nothing',
        async (id) => {
          const before = await snapshot();
          const reply = await client.call(`/v1/filters/${id}`, {
            method: 'DELETE',
            headers: bearer(secret),
          });
          expect([400, 404, 405]).toContain(reply.status);
          expect(reply.body.error).toMatch(/^(invalid_request|not_found|method_not_allowed)$/);
          expect(await snapshot()).toEqual(before);
        },
      );
    });

    describe('GET /v1/account', () => {
      it('answers the account object', async () => {
        const reply = await client.call('/v1/account', { headers: bearer(secret) });
        expect(reply.status).toBe(200);
        expect(reply.body).toMatchObject({
          email: expect.stringMatching(/@example\.org$/),
          plan: 'enterprise',
          rate_limit: { per_minute: 300 },
        });
        const { available, reserved, used, total } = reply.body.credits;
        expect(available + reserved + used).toBe(total);
      });
    });

    describe('batch jobs', () => {
      const submit = (key: string, body: unknown, more: Record<string, string> = {}) =>
        client.call('/v1/verify', {
          method: 'POST',
          headers: bearer(key, { 'content-type': 'application/json', ...more }),
          body: JSON.stringify(body),
        });

      it('submits, reports progress and streams the results as JSON, CSV and NDJSON', async () => {
        const own = await api.account();
        const emails = ['a@example.org', 'deliverable@example.com', 'a@example.org', 'bad@@x'];
        const submitted = await submit(own.secret, { emails, method: 'quick' });
        expect(submitted.status).toBe(202);
        expect(submitted.body).toMatchObject({ status: 'processing', total_emails: 4 });
        expect(submitted.headers.get('x-ratelimit-limit')).toBe('300');
        const { id } = submitted.body as { id: string };
        await api.service.batchWork.idle();

        const status = await client.call(`/v1/verify/${id}`, { headers: bearer(own.secret) });
        expect(status.body).toMatchObject({
          id,
          status: 'completed',
          total_emails: 4,
          processed: 4,
          percent_complete: 100,
        });
        // Built on the base URL kept with the job: mailverdict/node's own address, port
        // included; a handler mounted with none configured gives the path alone.
        const base = client.name === 'node' ? (client as unknown as NodeClient).server.url : '';
        expect(status.body.download_url).toBe(`${base}/v1/verify/${id}/results`);

        const json = await client.call(`/v1/verify/${id}/results`, { headers: bearer(own.secret) });
        expect(json.status).toBe(200);
        expect(json.body.results.map((r: { email: string }) => r.email)).toEqual(emails);
        expect(json.body.results.map((r: { input: string }) => r.input)).toEqual(emails);
        expect(json.body.results[2].duplicate).toBe(true);
        expect(json.body.results[3].state).toBe('undeliverable');

        const csv = await client.call(`/v1/verify/${id}/results?format=csv`, {
          headers: bearer(own.secret),
        });
        expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
        const rows = csv.text.trim().split(/\r?\n/);
        expect(rows).toHaveLength(5);
        expect(rows[0]).toMatch(/^input,email,state,score,reason/);

        const ndjson = await client.call(`/v1/verify/${id}/results`, {
          headers: bearer(own.secret, { accept: 'application/x-ndjson' }),
        });
        expect(ndjson.headers.get('content-type')).toMatch(/ndjson/);
        const lines = ndjson.text
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line));
        expect(lines.map((r: { email: string }) => r.email)).toEqual(emails);

        // Another account's job is not found; neither is a job that does not exist.
        for (const path of [`/v1/verify/${id}`, `/v1/verify/${id}/results`]) {
          const foreign = await client.call(path, { headers: bearer(secret) });
          expect(foreign.status).toBe(404);
        }
        const unknown = await client.call('/v1/verify/batch_unknown', { headers: bearer(secret) });
        expect(unknown.status).toBe(404);
        const format = await client.call(`/v1/verify/${id}/results?format=xml`, {
          headers: bearer(own.secret),
        });
        expect(format.status).toBe(400);
      });

      it('answers one job per Idempotency-Key and refuses its reuse for another batch', async () => {
        const own = await api.account();
        const key = { 'idempotency-key': `batch-${kind}` };
        const first = await submit(own.secret, { emails: ['b@example.org'] }, key);
        const again = await submit(own.secret, { emails: ['b@example.org'] }, key);
        expect(again.body.id).toBe(first.body.id);
        const other = await submit(own.secret, { emails: ['c@example.org'] }, key);
        expect(other.status).toBe(409);
        await api.service.batchWork.idle();
      });

      it('refuses a batch the account cannot pay for with 402, changing nothing', async () => {
        const poor = await api.account({ credits: 1 });
        const before = await snapshot(poor.accountId);
        const reply = await submit(poor.secret, { emails: ['d@example.org', 'e@example.org'] });
        expect(reply.status).toBe(402);
        expect(reply.body).toMatchObject({ error: 'insufficient_credits', available: 1 });
        expect(await snapshot(poor.accountId)).toEqual(before);
      });

      it('refuses results before the job completes with 409 and the progress', async () => {
        let release: () => void = () => undefined;
        const gate = new Promise<void>((resolve) => (release = resolve));
        const slow = await apiFixture(undefined, {
          dns: { mx: () => gate.then(() => ({ kind: 'nxdomain' }) as const) },
        });
        const own = await slow.account();
        const slowClient = await makeClient(slow.service);
        opened.push(slowClient);
        const submitted = await slowClient.call('/v1/verify', {
          method: 'POST',
          headers: bearer(own.secret, { 'content-type': 'application/json' }),
          body: JSON.stringify({ emails: ['f@example.org'] }),
        });
        const { id } = submitted.body as { id: string };
        const early = await slowClient.call(`/v1/verify/${id}/results`, {
          headers: bearer(own.secret),
        });
        expect(early.status).toBe(409);
        expect(early.body).toMatchObject({
          error: 'batch_not_completed',
          id,
          status: 'processing',
          processed: 0,
        });
        const progress = await slowClient.call(`/v1/verify/${id}`, { headers: bearer(own.secret) });
        expect(progress.body).toMatchObject({ status: 'processing' });
        expect(progress.body.download_url).toBeUndefined();
        release();
        await slow.service.batchWork.idle();
        const done = await slowClient.call(`/v1/verify/${id}/results`, {
          headers: bearer(own.secret),
        });
        expect(done.status).toBe(200);
      });

      const manyEmails = () =>
        JSON.stringify({ emails: Array.from({ length: 50_001 }, (_, i) => `u${i}@example.org`) });
      it.each([
        ['no emails', () => '{"emails": []}', 'emails'],
        ['emails as a string', () => '{"emails": "a@example.org"}', 'emails'],
        ['a number among emails', () => '{"emails": ["a@example.org", 7]}', 'emails'],
        ['an unknown method', () => '{"emails": ["a@example.org"], "method": "deep"}', 'method'],
        [
          'a numeric callback_url',
          () => '{"emails": ["a@example.org"], "callback_url": 5}',
          'callback_url',
        ],
        ['an unknown field', () => '{"emails": ["a@example.org"], "colour": "red"}', 'colour'],
        ['50,001 emails', manyEmails, 'emails'],
      ])('refuses a batch with %s, changing nothing', async (_name, body, field) => {
        const before = await snapshot();
        const reply = await client.call('/v1/verify', {
          method: 'POST',
          headers: bearer(secret, { 'content-type': 'application/json' }),
          body: body(),
        });
        expect(reply.status).toBe(400);
        expect(reply.body).toMatchObject({ error: 'invalid_request', field });
        expect(await snapshot()).toEqual(before);
      });

      it('shows the webhook delivery in the status; POST .../webhook queues it again', async () => {
        const answers = [500];
        const hooked = await apiFixture(undefined, undefined, {
          webhookSender: createMemoryWebhookSender(() => ({
            kind: 'status',
            status: answers.shift() ?? 204,
          })),
          // No retries: the first failure is final.
          webhookRetryScheduleMs: [],
        });
        const own = await hooked.account();
        const stranger = await hooked.account();
        const hookedClient = await makeClient(hooked.service);
        opened.push(hookedClient);
        const call = (path: string, key: string, method = 'GET') =>
          hookedClient.call(path, { method, headers: bearer(key) });
        const submitted = await hookedClient.call('/v1/verify', {
          method: 'POST',
          headers: bearer(own.secret, { 'content-type': 'application/json' }),
          body: JSON.stringify({
            emails: ['a@example.org'],
            method: 'quick',
            callback_url: 'https://hooks.example.com/in',
          }),
        });
        const { id } = submitted.body as { id: string };
        await hooked.service.batchWork.idle();
        await hooked.service.batchWork.deliverWebhooks();

        const failed = await call(`/v1/verify/${id}`, own.secret);
        expect(failed.body.webhook).toEqual({
          status: 'failed',
          attempts: 1,
          last_status: 500,
          last_error: 'HTTP 500',
          next_attempt_at: null,
        });
        const queued = await call(`/v1/verify/${id}/webhook`, own.secret, 'POST');
        expect(queued.status).toBe(202);
        expect(queued.headers.get('x-ratelimit-limit')).toBe('300');
        expect(queued.body).toMatchObject({ id, status: 'completed' });
        expect(queued.body.webhook).toMatchObject({ status: 'pending', attempts: 0 });
        await hooked.service.batchWork.deliverWebhooks();
        const delivered = await call(`/v1/verify/${id}`, own.secret);
        expect(delivered.body.webhook).toMatchObject({
          status: 'delivered',
          attempts: 1,
          last_status: 204,
          last_error: null,
        });

        // Another account's job is not found; a job without a callback has nothing to send.
        expect((await call(`/v1/verify/${id}/webhook`, stranger.secret, 'POST')).status).toBe(404);
        const plain = await hookedClient.call('/v1/verify', {
          method: 'POST',
          headers: bearer(own.secret, { 'content-type': 'application/json' }),
          body: JSON.stringify({ emails: ['b@example.org'], method: 'quick' }),
        });
        await hooked.service.batchWork.idle();
        const none = await call(
          `/v1/verify/${plain.body.id as string}/webhook`,
          own.secret,
          'POST',
        );
        expect(none.status).toBe(409);
        expect(none.body).toMatchObject({ error: 'conflict' });
        const wrongMethod = await call(`/v1/verify/${id}/webhook`, own.secret);
        expect(wrongMethod.status).toBe(405);
        expect(wrongMethod.headers.get('allow')).toBe('POST, OPTIONS');
      });

      it('answers a JSON-less batch with 415', async () => {
        const reply = await client.call('/v1/verify', {
          method: 'POST',
          headers: bearer(secret, { 'content-type': 'text/plain' }),
          body: 'a@example.org',
        });
        expect(reply.status).toBe(415);
      });
    });

    describe('routing and errors', () => {
      it.each([
        '/',
        '/v1',
        '/v2/verify',
        '/v1/verifyx',
        '/v1/account/',
        '/v1/filters/a/b',
        '/v1/verify/a/b',
      ])('answers 404 for %s', async (path) => {
        const reply = await client.call(path, { headers: bearer(secret) });
        expect(reply.status).toBe(404);
        expect(reply.body.error).toBe('not_found');
      });

      it.each([
        ['PUT', '/v1/account', 'GET, HEAD, OPTIONS'],
        ['DELETE', '/v1/verify', 'GET, HEAD, POST, OPTIONS'],
        ['POST', '/v1/filters/flt_1', 'DELETE, OPTIONS'],
        ['PATCH', '/v1/filters', 'GET, HEAD, POST, OPTIONS'],
        ['POST', '/v1/openapi.json', 'GET, HEAD, OPTIONS'],
      ])('answers %s %s with 405 and Allow', async (method, path, allow) => {
        const reply = await client.call(path, { method, headers: bearer(secret) });
        expect(reply.status).toBe(405);
        expect(reply.body.error).toBe('method_not_allowed');
        expect(reply.headers.get('allow')).toBe(allow);
      });

      it('serves the OpenAPI document', async () => {
        const reply = await client.call('/v1/openapi.json');
        expect(reply.status).toBe(200);
        expect(reply.body).toEqual(JSON.parse(JSON.stringify(OPENAPI_DOCUMENT)));
        expect(reply.body.openapi).toBe('3.1.0');
      });

      it('answers a bug with a generic 500 and tells onError', async () => {
        const told: unknown[] = [];
        const broken = {
          ...api.service,
          account: () =>
            Promise.reject(new Error('ENOENT: /var/secret/path at Object.<anonymous>')),
        } as Service;
        const made = await makeClient(broken, { onError: (error) => told.push(error) });
        opened.push(made);
        const reply = await made.call('/v1/account', { headers: bearer(secret) });
        expect(reply.status).toBe(500);
        expect(reply.body).toEqual({ error: 'internal_error', message: expect.any(String) });
        expect(reply.text).not.toMatch(/secret|ENOENT|at Object/);
        expect(told).toHaveLength(1);
      });
    });
  });
}
