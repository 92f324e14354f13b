import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../../src/http/handler.js';
import { createNodeListener } from '../../src/http/node-server.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH, chromiumAvailable } from '../helpers/chromium.js';
import { apiFixture } from '../helpers/service.js';

/**
 * A real browser uses a public key (issue 13): Debian's chromium, headless, loads a page from
 * a trusted origin whose script calls GET /v1/verify through fetch (a preflight first, the
 * key in the Authorization header) and shows the verdict; the same page from an untrusted
 * origin is refused: the server answers 403 and the browser does not let the page read it.
 * Both origins are names that chromium's resolver maps to 127.0.0.1: nothing leaves loopback.
 */
const TRUSTED_HOST = 'app.mailverdict.test';
const UNTRUSTED_HOST = 'evil.attacker.test';
const runnable = chromiumAvailable();

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>signup</title></head>
<body><p id="verdict">pending</p>
<script type="module">
  const { api, key } = Object.fromEntries(new URLSearchParams(location.search));
  const out = document.getElementById('verdict');
  try {
    const response = await fetch(api + '/v1/verify?email=deliverable@example.com', {
      headers: { Authorization: 'Bearer ' + key },
    });
    const body = await response.json();
    out.textContent = response.status + ' ' + body.state + ' ' + response.headers.get('x-ratelimit-limit');
  } catch (error) {
    out.textContent = 'blocked: ' + error.name;
  }
</script></body></html>`;

describe.skipIf(!runnable)('a browser page with a public key', () => {
  let api: Server;
  let pages: Server;
  let context: BrowserContext;
  let profile: string;
  let apiUrl: string;
  let pagePort: number;
  let publicKey: string;
  /** What the API server answered, in order: method, Origin, status. */
  const seen: { method: string; origin: string | null; status: number }[] = [];

  const listen = async (server: Server): Promise<number> => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  };

  beforeAll(async () => {
    const fixture = await apiFixture();
    const { accountId } = await fixture.account();
    // The page is served over http: its domain is trusted with http:// written.
    publicKey = await fixture.publicKey(accountId, [`http://${TRUSTED_HOST}`]);
    const handler = createHandler(fixture.service, { onError: () => undefined });
    api = createServer(
      createNodeListener(async (request) => {
        const response = await handler(request);
        seen.push({
          method: request.method,
          origin: request.headers.get('origin'),
          status: response.status,
        });
        return response;
      }),
    );
    apiUrl = `http://127.0.0.1:${await listen(api)}`;
    pages = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(PAGE);
    });
    pagePort = await listen(pages);
    profile = mkdtempSync(join(tmpdir(), 'mailverdict-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: [
        ...CHROMIUM_ARGS,
        `--host-resolver-rules=MAP ${TRUSTED_HOST} 127.0.0.1, MAP ${UNTRUSTED_HOST} 127.0.0.1`,
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await new Promise((resolve) => api?.close(resolve));
    await new Promise((resolve) => pages?.close(resolve));
    if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
  });

  async function visit(host: string): Promise<string> {
    const page = await context.newPage();
    const query = new URLSearchParams({ api: apiUrl, key: publicKey });
    await page.goto(`http://${host}:${pagePort}/?${query}`);
    const verdict = page.locator('#verdict');
    await verdict.filter({ hasNotText: 'pending' }).waitFor();
    const text = await verdict.innerText();
    await page.close();
    return text;
  }

  it('shows the verdict on a page of a trusted domain, after a preflight', async () => {
    seen.length = 0;
    expect(await visit(TRUSTED_HOST)).toBe('200 deliverable 300');
    const origin = `http://${TRUSTED_HOST}:${pagePort}`;
    expect(seen).toEqual([
      { method: 'OPTIONS', origin, status: 204 },
      { method: 'GET', origin, status: 200 },
    ]);
  });

  it('is refused on a page of any other origin: 403, unreadable to the page', async () => {
    seen.length = 0;
    expect(await visit(UNTRUSTED_HOST)).toBe('blocked: TypeError');
    const origin = `http://${UNTRUSTED_HOST}:${pagePort}`;
    expect(seen).toEqual([
      { method: 'OPTIONS', origin, status: 204 },
      { method: 'GET', origin, status: 403 },
    ]);
  });
});
