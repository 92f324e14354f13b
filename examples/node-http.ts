// Serve the /v1 API on node:http: alone with serve(), or beside your own routes with
// createNodeListener. The client IP is the socket's peer address; X-Forwarded-For is read only
// from the proxies named in trustedProxies.
import { createServer } from 'node:http';
import { createEngine } from 'mailverdict';
import { createService } from 'mailverdict/service';
import { createHandler } from 'mailverdict/http';
import { createNodeListener, serve } from 'mailverdict/node';
import { createSqliteStore } from 'mailverdict/sqlite';

export function createApp(path = 'mailverdict.db') {
  const store = createSqliteStore(path);
  const service = createService({ engine: createEngine({ offline: true }), store });
  return { store, service };
}

/** Standalone: serve() listens, resumes batch jobs, and shuts down gracefully. */
export async function standalone(path?: string, port = 8080) {
  const { store, service } = createApp(path);
  const server = await serve(service, { port, trustedProxies: ['127.0.0.1'] });
  const stop = async () => {
    await server.close(); // finishes requests in flight; running batches resume next start
    await store.close();
  };
  return { service, server, stop };
}

/** Beside your own routes: the API under /v1, everything else yours. */
export async function embedded(path?: string) {
  const { store, service } = createApp(path);
  await service.start(); // resumes batch jobs a restart interrupted; service.stop() on the way out
  const api = createNodeListener(createHandler(service));
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/v1/')) return api(req, res);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('my app');
  });
  return { service, server, store };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { server, stop } = await standalone();
  console.log(`mailverdict API on ${server.url}/v1/openapi.json`);
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}
