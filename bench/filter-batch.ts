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
/** Pairs of jobs (without, then with the filter) per runner, after one pair of warm-up. */
const ROUNDS = Number(process.env.FILTER_BENCH_ROUNDS ?? 5);
const WORKERS = 2;
/** The warm-up pair and ROUNDS pairs. */
const JOBS_PER_RUNNER = 2 * (ROUNDS + 1);
/** The one filter: the mail hosts of one domain in ten (bench/dns-process.ts, mailHostIp). */
const FILTER = '198.18.0.0/24';

export interface FilterBatchRow {
  readonly runner: string;
  readonly filtered: boolean;
  /** Median wall time, submission to completed, of ROUNDS jobs. */
  readonly ms: number;
  /**
   * The median of the ROUNDS ratios of a job to the job without the filter run just before
   * it: jobs run side by side see the same machine, whose load swings between rounds.
   */
  readonly ratio: number;
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
 * job finds another's answers in a worker's cache; jobs without and with the filter
 * alternate, after a pair that warms the processes up and is not counted.
 */
async function rows(runner: string, setup: Setup, firstDomain: number): Promise<FilterBatchRow[]> {
  const { service } = setup;
  const times = { false: [] as number[], true: [] as number[] };
  const blocked = { false: 0, true: 0 };
  let job = 0;
  for (let round = -1; round < ROUNDS; round++) {
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
      const first = firstDomain + job++ * DOMAINS;
      const emails = Array.from(
        { length: SIZE },
        (_, i) => `user${i}@domain${first + (i % DOMAINS)}.com`,
      );
      const started = performance.now();
      const { id } = await service.submitBatch(caller, { emails, method: 'quick' });
      await setup.done(account.id, id);
      const ms = performance.now() - started;
      const key = String(filtered) as 'false' | 'true';
      if (round >= 0) times[key].push(ms);
      blocked[key] = await blockedCount(setup.store, id);
    }
  }
  const ratios = times.true.map((ms, round) => ms / (times.false[round] as number));
  return [false, true].map((filtered) => {
    const key = String(filtered) as 'false' | 'true';
    const ratio = filtered ? median(ratios) : 1;
    return { runner, filtered, ms: median(times[key]), ratio, blocked: blocked[key] };
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
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
    return await rows(
      'SQLite, in-process runner',
      { service, store, done: () => service.batchWork.idle() },
      0,
    );
  } finally {
    await service.stop();
    await store.close();
  }
}

async function bullmqRows(dns: DnsChild): Promise<FilterBatchRow[]> {
  const cluster = await startBullmqCluster(WORKERS, dns.address);
  const { service, store } = cluster;
  try {
    return await rows(
      `BullMQ + Redis store, ${WORKERS} workers`,
      { service, store, done: (accountId, id) => jobCompleted(store, accountId, id) },
      JOBS_PER_RUNNER * DOMAINS,
    );
  } finally {
    await cluster.close();
  }
}

export async function filterBatchBench(): Promise<FilterBatchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'mailverdict-filter-bench-'));
  // Every job of both runners has domains of its own.
  const dns = await startDnsChild(2 * JOBS_PER_RUNNER * DOMAINS, LATENCY_MS);
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
    `\nBatch jobs with an IP filter: a ${SIZE.toLocaleString('en')}-address quick job over ${DOMAINS} domains, a loopback DNS server (its own process) answering after ${LATENCY_MS} ms, with and without one IP filter (${FILTER}, the mail hosts of one domain in ten) on the account. Median of ${ROUNDS} jobs each, submission to completed, after a pair of warm-up; each job asks about domains of its own. The ratio is the median of each job's to the job without the filter run just before it (the machine's load swings between rounds). Target: within 1.5x.\n`,
  );
  console.log('| runner | IP filter | wall ms | vs no filter | blocked by the filter |');
  console.log('|---|---|---:|---:|---:|');
  for (const row of rows) {
    console.log(
      `| ${row.runner} | ${row.filtered ? 'one' : 'none'} | ${row.ms.toFixed(0)} | ${row.ratio.toFixed(2)}x | ${row.blocked.toLocaleString('en')} |`,
    );
  }
}

// Run on its own: node --import tsx bench/filter-batch.ts
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  printFilterBatchTable(await filterBatchBench());
}
