// Mount the /v1 API in a Hono app: the handler is a fetch function, so Hono passes it the
// raw Request and returns its Response. Runs the same on Bun, Deno, Cloudflare Workers and
// Node (with @hono/node-server, or mailverdict/node's createNodeListener as here).
import { Hono } from 'hono';
import { createEngine } from 'mailverdict';
import { createMemoryStore, createService } from 'mailverdict/service';
import { createHandler } from 'mailverdict/http';

export const service = createService({
  engine: createEngine({ offline: true }), // drop `offline` to look up MX records
  store: createMemoryStore(), // mailverdict/sqlite's createSqliteStore to keep data
});

const api = createHandler(service, {
  baseUrl: 'https://api.example.com', // where batch download_urls point
  // The client IP for private keys' allow-lists and public keys' daily limits. On Bun:
  // (request) => server.requestIP(request)?.address; behind a proxy, add trustedProxies.
});

export const app = new Hono();
app.get('/health', (c) => c.text('ok'));
app.all('/v1/*', (c) => api(c.req.raw));

export default app; // Bun and Deno serve `export default app`; Workers too.
