// mailverdict/node in a process of its own, so that a test can read the server's memory alone
// (its RSS is not the test runner's). It serves an offline engine on a memory store, prints one
// JSON line `{ port, secret }` once it listens, and answers each IPC message `'memory'` with
// `{ rss, heapUsed, peak }` in bytes: the first two after a full GC (run it with --expose-gc),
// `peak` the highest RSS since the message before.
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

// The highest RSS since the last 'memory' message, sampled every 10 ms: the process's own
// peak (resourceUsage's maxRSS) counts its start, which may be higher than anything after.
let peak = 0;
setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10).unref();
process.on('message', (message) => {
  if (message !== 'memory') return;
  const sampled = Math.max(peak, process.memoryUsage.rss());
  (globalThis as { gc?: () => void }).gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  peak = rss;
  process.send?.({ rss, heapUsed, peak: sampled });
});
process.on('disconnect', () => {
  void server.close().then(() => process.exit(0));
});
process.stdout.write(`${JSON.stringify({ port: server.port, secret })}\n`);
