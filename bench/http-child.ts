/**
 * A server for the HTTP bench, in its own process so that autocannon's load generation does
 * not share its event loop: `bare` is node:http answering a fixed JSON body (the ceiling),
 * `sqlite` is mailverdict/node on a SQLite file with an offline engine, `memory` the same on the
 * memory store (what the HTTP layer costs without the durable store).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHistogram } from 'node:perf_hooks';
import { createEngine } from '../src/index.js';
import { createMemoryStore, createService } from '../src/service.js';
import { serve } from '../src/node.js';
import { createSqliteStore } from '../src/sqlite.js';

const mode = process.argv[2];
/** How often the loop watch's timer asks to run. */
const WATCH_INTERVAL_MS = 5;

/**
 * How late the event loop ran a timer asking every 5 ms, since the last question, and for the
 * longest wait, the CPU time this process used meanwhile (and the CPU it used in all, as a
 * share of one core): near the wait, our own work (or its
 * garbage collection) held the loop; far below it, the process was runnable and the shared
 * machine ran something else.
 */
function watchLoop() {
  const late = createHistogram();
  let longest = { ms: 0, cpuMs: 0 };
  let last = performance.now();
  let lastCpu = process.cpuUsage();
  setInterval(() => {
    const at = performance.now();
    const cpu = process.cpuUsage();
    const ms = Math.max(0, at - last - WATCH_INTERVAL_MS);
    late.record(Math.max(1, Math.round(ms * 1000)));
    if (ms > longest.ms) {
      longest = { ms, cpuMs: (cpu.user + cpu.system - lastCpu.user - lastCpu.system) / 1000 };
    }
    last = at;
    lastCpu = cpu;
  }, WATCH_INTERVAL_MS).unref();
  let askedAt = performance.now();
  let askedCpu = process.cpuUsage();
  return () => {
    const cpu = process.cpuUsage(askedCpu);
    const answer = {
      loopDelayP99Ms: late.percentile(99) / 1000,
      loopDelayMaxMs: longest.ms,
      loopDelayMaxCpuMs: longest.cpuMs,
      cpuShare: (cpu.user + cpu.system) / 1000 / (performance.now() - askedAt),
    };
    askedAt = performance.now();
    askedCpu = process.cpuUsage();
    late.reset();
    longest = { ms: 0, cpuMs: 0 };
    return answer;
  };
}

// The parent asks for this process's CPU time around a run: CPU per request is what the server
// costs, whatever else the shared machine is doing (requests/s moves with the load generator).
// The availability bench asks, before and after each disturbance, for the resident memory and
// the loop watch's figures since it last asked (the first question starts the watch).
let loop: ReturnType<typeof watchLoop> | undefined;
process.on('message', (message) => {
  if (message === 'cpu') process.send?.({ cpu: process.cpuUsage() });
  if (message === 'loop') {
    loop ??= watchLoop();
    process.send?.({ rss: process.memoryUsage().rss, ...loop() });
  }
});
/** Keys the load rotates through, so that none meets its plan's 300 a minute. */
const KEYS = 1000;
const BODY = JSON.stringify({
  email: 'alice@example.org',
  state: 'deliverable',
  score: 88,
  reason: 'accepted_email',
});

if (mode === 'bare') {
  // Keys of the same shape as real ones, so that autocannon builds the same requests for the
  // ceiling as for mailverdict (a bearer header each): driven without them, autocannon sent
  // a prebuilt request and the bare server measured 10% faster (50,100 against 45,000/s,
  // three 5 s runs each).
  const keys = Array.from({ length: KEYS }, (_, i) => `mv_sk_${String(i).padStart(32, '0')}`);
  const server = createServer((_request, response) => {
    response.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(BODY),
    });
    response.end(BODY);
  });
  server.listen(0, '127.0.0.1', () => {
    process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, keys });
  });
  process.on('disconnect', () => server.close(() => process.exit(0)));
} else {
  const dir = mkdtempSync(join(tmpdir(), 'mailverdict-http-bench-'));
  const store = mode === 'memory' ? createMemoryStore() : createSqliteStore(join(dir, 'bench.db'));
  const service = createService({ engine: createEngine({ offline: true }), store });
  const account = await service.admin.createAccount({
    email: 'bench@example.org',
    plan: 'enterprise',
    credits: 100_000_000,
  });
  const keys: string[] = [];
  for (let i = 0; i < KEYS; i++) keys.push((await service.admin.createKey(account.id)).secret);
  // argv[3]: serve options for this run (bench/availability.ts shortens the write timeout).
  const extra = JSON.parse(process.argv[3] ?? '{}') as Record<string, unknown>;
  const server = await serve(service, { onError: (error) => console.error(error), ...extra });
  process.send?.({ url: server.url, keys });
  process.on('disconnect', () => {
    void server
      .close()
      .then(() => store.close())
      .then(() => {
        rmSync(dir, { recursive: true, force: true });
        process.exit(0);
      });
  });
}
