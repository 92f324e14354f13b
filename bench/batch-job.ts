/**
 * One batch job in a fresh process (its peak RSS is its own), started by bench/batch.ts:
 * 50,000 addresses submitted to a service on a SQLite file, run against the loopback DNS
 * server given, then the results downloaded in each format. Prints one JSON line.
 */
import { createEngine } from '../src/index.js';
import { createService } from '../src/compose/service.js';
import { createSqliteStore } from '../src/sqlite.js';

const { dns, method, domains, size, path } = JSON.parse(process.argv[2] as string) as {
  dns: string;
  method: 'quick' | 'standard';
  domains: number;
  size: number;
  path: string;
};
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const mb = (bytes: number) => bytes / 1024 / 1024;

const store = createSqliteStore(path);
const service = createService({
  engine: createEngine({
    dnsOptions: { servers: [dns], timeoutMs: 5_000, tries: 1 },
    dnsCanary: false,
  }),
  store,
});
const account = await service.admin.createAccount({
  email: 'bench@example.org',
  credits: size * 2,
});
const emails = Array.from({ length: size }, (_, i) => `user${i}@domain${i % domains}.com`);
const rssBefore = process.memoryUsage().rss;
const started = performance.now();
const { id } = await service.submitBatch({ accountId: account.id }, { emails, method });
const submitMs = performance.now() - started;
await service.batchWork.idle();
const ms = performance.now() - started;
const peakRssMb = process.resourceUsage().maxRSS / 1024;
const status = await service.batchStatus({ accountId: account.id }, id);
if (status.status !== 'completed' || status.processed !== size) throw new Error('job incomplete');

const downloads = [];
for (const format of ['json', 'csv', 'ndjson'] as const) {
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  let heapPeak = heapBefore;
  let retainedPeak = heapBefore;
  let bytes = 0;
  let chunks = 0;
  const t = performance.now();
  let gcMs = 0;
  for await (const chunk of await service.batchResults({ accountId: account.id }, id, { format })) {
    bytes += Buffer.byteLength(chunk);
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    // What the stream keeps alive, as against garbage not yet collected: the heap after a
    // full GC every 10 chunks (5,000 records), the GC's own time taken out of the figure.
    if (++chunks % 10 === 0) {
      const g = performance.now();
      gc();
      gcMs += performance.now() - g;
      retainedPeak = Math.max(retainedPeak, process.memoryUsage().heapUsed);
    }
  }
  downloads.push({
    format,
    mb: mb(bytes),
    ms: performance.now() - t - gcMs,
    heapGrowthMb: mb(heapPeak - heapBefore),
    retainedMb: mb(retainedPeak - heapBefore),
  });
}
await service.stop();
await store.close();
process.stdout.write(
  `${JSON.stringify({ ms, submitMs, peakRssMb, rssBeforeMb: mb(rssBefore), downloads })}\n`,
);
