// mailverdict/node in a process of its own, so that a test can read the server's memory alone
// (its RSS is not the test runner's). It serves an offline engine on a memory store, prints one
// JSON line `{ port, secret }` once it listens, and answers each IPC message `'memory'` with
// `{ rss, heapUsed, maxRss }` in bytes (maxRss: the peak since it started), after a full GC
// when run with --expose-gc.
import { createEngine } from '../../src/compose/engine.js';
import { createService } from '../../src/compose/service.js';
import { serve } from '../../src/http/node-server.js';
import { createMemoryStore } from '../../src/store/memory-store.js';

const service = createService({
  engine: createEngine({ offline: true }),
  store: createMemoryStore(),
});
const account = await service.admin.createAccount({
  email: 'owner@example.org',
  plan: 'enterprise',
  credits: 1_000_000,
});
const { secret } = await service.admin.createKey(account.id);
const server = await serve(service);

process.on('message', (message) => {
  if (message !== 'memory') return;
  (globalThis as { gc?: () => void }).gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  process.send?.({ rss, heapUsed, maxRss: process.resourceUsage().maxRSS * 1024 });
});
process.on('disconnect', () => {
  void server.close().then(() => process.exit(0));
});
process.stdout.write(`${JSON.stringify({ port: server.port, secret })}\n`);
