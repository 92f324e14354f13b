import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium, type BrowserContext } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../../src/http/handler.js';
import { createNodeListener } from '../../src/http/node-server.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH, chromiumAvailable } from '../helpers/chromium.js';
import { apiFixture } from '../helpers/service.js';

/**
 * mailverdict/client bundled for browsers (esbuild, platform browser, where a node: import
 * cannot resolve) and run in headless Chromium: a page on a public key's trusted domain
 * verifies an address through createClient, and verifyWebhook checks a signature with the
 * browser's WebCrypto. Every name resolves to 127.0.0.1.
 */
const ENTRY = fileURLToPath(new URL('../../src/client.ts', import.meta.url));
const TRUSTED_HOST = 'shop.mailverdict.test';
const runnable = chromiumAvailable();
let bundle = '';

beforeAll(async () => {
  const built = await build({
    entryPoints: [ENTRY],
    bundle: true,
    platform: 'browser',
    format: 'iife',
    globalName: 'mailverdictClient',
    minify: true,
    write: false,
    logLevel: 'silent',
  });
  bundle = built.outputFiles[0]?.text ?? '';
}, 60_000);

describe('mailverdict/client as a browser bundle', () => {
  it('bundles for the browser with no node: module', () => {
    expect(bundle.length).toBeGreaterThan(1000);
    expect(bundle).not.toMatch(/["']node:/);
    expect(bundle).toContain('opaqueredirect');
  });

  describe.skipIf(!runnable)('in Chromium', () => {
    let api: Server;
    let pages: Server;
    let context: BrowserContext;
    let profile: string;
    let apiUrl: string;
    let pagePort: number;
    let publicKey: string;

    const listen = async (server: Server): Promise<number> => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return (server.address() as AddressInfo).port;
    };

    beforeAll(async () => {
      const fixture = await apiFixture();
      const { accountId } = await fixture.account();
      // The page is served over http: its domain is trusted with http:// written.
      publicKey = await fixture.publicKey(accountId, [`http://${TRUSTED_HOST}`]);
      api = createServer(
        createNodeListener(createHandler(fixture.service, { onError: () => undefined })),
      );
      apiUrl = `http://127.0.0.1:${await listen(api)}`;
      pages = createServer((request, response) => {
        if (request.url === '/client.js') {
          response.writeHead(200, { 'content-type': 'text/javascript' });
          return void response.end(bundle);
        }
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        response.end('<!doctype html><title>signup</title><script src="/client.js"></script>');
      });
      pagePort = await listen(pages);
      profile = mkdtempSync(join(tmpdir(), 'mailverdict-chromium-'));
      context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM_PATH,
        headless: true,
        args: [...CHROMIUM_ARGS, `--host-resolver-rules=MAP ${TRUSTED_HOST} 127.0.0.1`],
      });
    }, 60_000);

    afterAll(async () => {
      await context?.close();
      await new Promise((resolve) => api?.close(resolve));
      await new Promise((resolve) => pages?.close(resolve));
      if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
    });

    it('verifies an address from a page with a public key', async () => {
      const page = await context.newPage();
      await page.goto(`http://${TRUSTED_HOST}:${pagePort}/`);
      const answer = await page.evaluate(
        async ({ baseUrl, apiKey }) => {
          const { createClient } = (
            globalThis as unknown as { mailverdictClient: typeof import('../../src/client.js') }
          ).mailverdictClient;
          const client = createClient({ baseUrl, apiKey });
          const verdict = await client.verify('deliverable@example.com', { detailed: true });
          return { state: verdict.state, reason: verdict.reason, limit: client.rateLimit?.limit };
        },
        { baseUrl: apiUrl, apiKey: publicKey },
      );
      expect(answer).toEqual({ state: 'deliverable', reason: 'accepted_email', limit: 300 });
      await page.close();
    });

    it('checks a Standard Webhooks signature with WebCrypto', async () => {
      const page = await context.newPage();
      // A secure context (WebCrypto's subtle needs one): localhost is.
      await page.goto(`http://localhost:${pagePort}/`);
      const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
      const body = JSON.stringify({ event: 'batch.completed', id: 'batch_1', status: 'completed' });
      const timestamp = Math.floor(Date.now() / 1000);
      const headers = {
        'webhook-id': 'msg_1',
        'webhook-timestamp': String(timestamp),
        'webhook-signature': new Webhook(secret).sign('msg_1', new Date(timestamp * 1000), body),
      };
      const outcome = await page.evaluate(
        async ({ body, headers, secret }) => {
          const { verifyWebhook } = (
            globalThis as unknown as { mailverdictClient: typeof import('../../src/client.js') }
          ).mailverdictClient;
          const good = await verifyWebhook(body, headers, secret);
          const bad = await verifyWebhook(body.replace('batch_1', 'batch_2'), headers, secret).then(
            () => 'accepted',
            (error: { code: string }) => error.code,
          );
          return { id: good.id, bad };
        },
        { body, headers, secret },
      );
      expect(outcome).toEqual({ id: 'batch_1', bad: 'invalid_signature' });
      await page.close();
    });
  });
});
