/**
 * IP filters in batch jobs (issue 22): a 2,000-address quick job over 200 domains, with and
 * without one IP filter on the account, against a loopback DNS server (its own process)
 * answering after 20 ms. On SQLite with the in-process runner, and on BullMQ + the Redis
 * store with two `mailverdict worker` processes. The filter needs each domain's MX host
 * addresses as well as its MX: a job with it should still keep the engine's domain grouping
 * and read-ahead, so its wall time stays near the job's without it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEngine } from '../src/compose/engine.js';
import type { Store } from '../src/ports/store.js';
import { createService } from '../src/compose/service.js';
import type { Service } from '../src/service/service.js';
import { createSqliteStore } from '../src/sqlite.js';
import { startDnsChild, type DnsChild } from './dns-process.js';
import { jobCompleted, startBullmqCluster } from './scale.js';

const SIZE = Number(process.env.FILTER_BENCH_SIZE ?? 2_000);
const DOMAINS = Number(process.env.FILTER_BENCH_DOMAINS ?? 200);
const LATENCY_MS = Number(process.env.FILTER_BENCH_LATENCY_MS ?? 20);
/** Jobs per row: the best is reported (the first of a process pays its warm-up). */
const ROUNDS = Number(process.env.FILTER_BENCH_ROUNDS ?? 3);
const WORKERS = 2;
/** The one filter: the mail hosts of one domain in ten (bench/dns-process.ts, mailHostIp). */
const FILTER = '198.18.0.0/24';

export interface FilterBatchRow {
  readonly runner: string;
  readonly filtered: boolean;
  /** Best wall time, submission to completed, of ROUNDS jobs. */
  readonly ms: number;
  /** Addresses the filter answered (blocked_by_filter) in the last job. */
  readonly blocked: number;
}

/** What one runner needs to run a job for an account: its service and store. */
interface Setup {
  readonly service: Service;
  readonly store: Store;
  /** Waits until the job is finished. */
  done(accountId: string, id: string): Promise<void>;
}

/**
 * Each job asks about its own 200 domains (domain<k*200> ... of the DNS server), so that no
 * job finds another's answers in a worker's cache; with and without the filter alternate.
 */
async function rows(runner: string, setup: Setup): Promise<FilterBatchRow[]> {
  const { service } = setup;
  const best = { false: Infinity, true: Infinity };
  const blocked = { false: 0, true: 0 };
  let job = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const filtered of [false, true]) {
      const account = await service.admin.createAccount({
        email: `bench${job}@example.org`,
        plan: 'enterprise',
        credits: SIZE,
      });
      const caller = { accountId: account.id };
      if (filtered) {
        await service.createFilter(caller, { value: FILTER, type: 'ip_address', action: 'block' });
      }
      const first = job++ * DOMAINS;
      const emails = Array.from(
        { length: SIZE },
        (_, i) => `user${i}@domain${first + (i % DOMAINS)}.com`,
      );
      const started = performance.now();
      const { id } = await service.submitBatch(caller, { emails, method: 'quick' });
      await setup.done(account.id, id);
      const ms = performance.now() - started;
      const key = String(filtered) as 'false' | 'true';
      best[key] = Math.min(best[key], ms);
      blocked[key] = await blockedCount(setup.store, id);
    }
  }
  return [false, true].map((filtered) => {
    const key = String(filtered) as 'false' | 'true';
    return { runner, filtered, ms: best[key], blocked: blocked[key] };
  });
}

async function blockedCount(store: Store, jobId: string): Promise<number> {
  let blocked = 0;
  for (let after = -1; ;) {
    const page = await store.jobResults(jobId, after, 1_000);
    if (page.length === 0) return blocked;
    for (const row of page) if (row.record.includes('"blocked_by_filter"')) blocked++;
    after = (page.at(-1) as { position: number }).position;
  }
}

async function sqliteRows(dns: DnsChild, dir: string): Promise<FilterBatchRow[]> {
  const store = createSqliteStore(join(dir, 'filter-bench.db'));
  const service = createService({
    engine: createEngine({
      dnsOptions: { servers: [dns.address], timeoutMs: 5_000, tries: 1 },
      dnsCanary: false,
    }),
    store,
  });
  try {
    return await rows('SQLite, in-process runner', {
      service,
      store,
      done: () => service.batchWork.idle(),
    });
  } finally {
    await service.stop();
    await store.close();
  }
}

async function bullmqRows(dns: DnsChild): Promise<FilterBatchRow[]> {
  const cluster = await startBullmqCluster(WORKERS, dns.address);
  const { service, store } = cluster;
  try {
    return await rows(`BullMQ + Redis store, ${WORKERS} workers`, {
      service,
      store,
      done: (accountId, id) => jobCompleted(store, accountId, id),
    });
  } finally {
    await cluster.close();
  }
}

export async function filterBatchBench(): Promise<FilterBatchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'mailverdict-filter-bench-'));
  // Every job of both runners has domains of its own.
  const dns = await startDnsChild(DOMAINS * ROUNDS * 2 * 2, LATENCY_MS);
  try {
    const sqlite = await sqliteRows(dns, dir);
    return [...sqlite, ...(await bullmqRows(dns))];
  } finally {
    await dns.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printFilterBatchTable(rows: readonly FilterBatchRow[]) {
  console.log(
    `\nBatch jobs with an IP filter: a ${SIZE.toLocaleString('en')}-address quick job over ${DOMAINS} domains, a loopback DNS server (its own process) answering after ${LATENCY_MS} ms, with and without one IP filter (${FILTER}, the mail hosts of one domain in ten) on the account. Best of ${ROUNDS} jobs, submission to completed; each job asks about domains of its own. Target: the filter's row within 1.5x of the row without.\n`,
  );
  console.log('| runner | IP filter | wall ms | vs no filter | blocked by the filter |');
  console.log('|---|---|---:|---:|---:|');
  for (const row of rows) {
    const without = rows.find((other) => other.runner === row.runner && !other.filtered);
    const ratio = without === undefined ? '' : `${(row.ms / without.ms).toFixed(2)}x`;
    console.log(
      `| ${row.runner} | ${row.filtered ? 'one' : 'none'} | ${row.ms.toFixed(0)} | ${ratio} | ${row.blocked.toLocaleString('en')} |`,
    );
  }
}

// Run on its own: node --import tsx bench/filter-batch.ts
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  printFilterBatchTable(await filterBatchBench());
}
