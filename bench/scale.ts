/**
 * Scale-out (issue 15): a 50,000-address quick job over 5,000 domains, queued on BullMQ and
 * verified by 1, 2 and 4 `mailverdict worker` processes sharing one redis-server (the Redis
 * store and the queue), against a loopback DNS server (its own process) answering after
 * 20 ms. Wall time from submission to completed, the speed-up over one worker, and the CPU
 * the workers and redis-server used, to show what limits it on this machine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { bullmqBatchRunner } from '../src/bullmq.js';
import { createEngine } from '../src/compose/engine.js';
import { createRedisStore } from '../src/redis.js';
import { createService } from '../src/compose/service.js';
import type { Store } from '../src/ports/store.js';
import type { Service } from '../src/service/service.js';
import { startRedisServer, type RedisTestServer } from '../test/helpers/redis-server.js';
import { startDnsChild } from './dns-process.js';

const SIZE = Number(process.env.SCALE_BENCH_SIZE ?? 50_000);
const DOMAINS = Number(process.env.SCALE_BENCH_DOMAINS ?? 5_000);
const LATENCY_MS = Number(process.env.SCALE_BENCH_LATENCY_MS ?? 20);
const WORKER_COUNTS = [1, 2, 4];
const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface ScaleRow {
  readonly workers: number;
  readonly ms: number;
  readonly submitMs: number;
  readonly mxQueries: number;
  /** CPU seconds used during the run, by the workers together and by redis-server. */
  readonly workerCpuS: number;
  readonly redisCpuS: number;
}

/** utime + stime of a process, in seconds (Linux /proc; 0 elsewhere). */
function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined || !existsSync(`/proc/${pid}/stat`)) return 0;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The built CLI when there is one (npm run bench builds first), else the sources. */
function workerCommand(): string[] {
  const built = `${ROOT}dist/cli/bin.js`;
  return existsSync(built) ? [built] : ['--import', 'tsx', `${ROOT}src/cli/bin.ts`];
}

/** A `mailverdict worker` process on `redisUrl`, resolving through `dns`, once it takes work. */
export function startWorker(redisUrl: string, dns: string): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [...workerCommand(), 'worker', '--redis', redisUrl, '--dns-server', dns, '--no-dns-canary'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes('Worker on')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`worker exited (${code}): ${stderr}`)));
  });
}

/** BullMQ over a fresh redis-server: this process queues jobs, worker processes verify them. */
export interface BullmqCluster {
  readonly redis: RedisTestServer;
  /** The Redis store the API and the workers share. */
  readonly store: Store;
  /** The API: an offline engine, so that only the workers verify. */
  readonly service: Service;
  readonly workers: readonly ChildProcess[];
  /** Stops the API, the workers (SIGTERM, awaited) and redis-server. */
  close(): Promise<void>;
}

/** A redis-server, `count` `mailverdict worker` processes resolving through `dns`, and the API. */
export async function startBullmqCluster(count: number, dns: string): Promise<BullmqCluster> {
  const redis = await startRedisServer();
  const workers: ChildProcess[] = [];
  const store = createRedisStore(redis.url);
  const service = createService({
    engine: createEngine({ offline: true }),
    store,
    batch: { runner: bullmqBatchRunner({ connection: redis.url }) },
  });
  const close = async () => {
    await service.stop();
    for (const child of workers) child.kill('SIGTERM');
    await Promise.all(
      workers.map((child) =>
        child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : null,
      ),
    );
    await store.close();
    await redis.close();
  };
  try {
    for (let i = 0; i < count; i++) workers.push(await startWorker(redis.url, dns));
    await service.start();
  } catch (error) {
    await close();
    throw error;
  }
  return { redis, store, service, workers, close };
}

/** Resolves once the job is completed (polling the store); rejects if it failed. */
export async function jobCompleted(store: Store, accountId: string, id: string): Promise<void> {
  for (;;) {
    const job = await store.getJob(accountId, id);
    if (job?.status === 'completed') return;
    if (job?.status === 'failed') throw new Error(`the job failed: ${job.failureReason}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function oneRun(workers: number): Promise<ScaleRow> {
  const dns = await startDnsChild(DOMAINS, LATENCY_MS);
  const cluster = await startBullmqCluster(workers, dns.address);
  const { redis, store, service, workers: children } = cluster;
  try {
    const account = await service.admin.createAccount({
      email: 'bench@example.org',
      plan: 'enterprise',
      credits: SIZE,
    });
    const emails = Array.from({ length: SIZE }, (_, i) => `user${i}@domain${i % DOMAINS}.com`);
    const cpuBefore = children.map((child) => cpuSeconds(child.pid));
    const redisBefore = cpuSeconds(redis.pid());
    const started = performance.now();
    const { id } = await service.submitBatch(
      { accountId: account.id },
      { emails, method: 'quick' },
    );
    const submitMs = performance.now() - started;
    await jobCompleted(store, account.id, id);
    const ms = performance.now() - started;
    return {
      workers,
      ms,
      submitMs,
      mxQueries: await dns.mxQueries(),
      workerCpuS: children.reduce(
        (sum, child, i) => sum + cpuSeconds(child.pid) - (cpuBefore[i] ?? 0),
        0,
      ),
      redisCpuS: cpuSeconds(redis.pid()) - redisBefore,
    };
  } finally {
    await cluster.close();
    await dns.stop();
  }
}

export async function scaleBench(): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = [];
  for (const workers of WORKER_COUNTS) rows.push(await oneRun(workers));
  return rows;
}

export function printScaleTable(rows: readonly ScaleRow[]) {
  console.log(
    `\nScale-out: a ${SIZE.toLocaleString('en')}-address quick job over ${DOMAINS.toLocaleString('en')} domains on BullMQ + the Redis store, verified by N \`mailverdict worker\` processes (2 chunks of 500 at once each), a loopback DNS server (its own process) answering after ${LATENCY_MS} ms; ${availableParallelism()} cores. Wall = submission to completed.\n`,
  );
  console.log(
    '| workers | wall ms | of which submit ms | verify ms (wall - submit) | speed-up vs 1 (verify) | MX queries | worker CPU s | redis-server CPU s | CPU busy (of the cores) |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  // Speed-up on the workers' part: the submission runs in this process, the same for every
  // row, and the first row's pays this process's warm-up.
  const verifyMs = (row: ScaleRow) => row.ms - row.submitMs;
  const one = rows[0] === undefined ? 1 : verifyMs(rows[0]);
  for (const row of rows) {
    const busy = (row.workerCpuS + row.redisCpuS) / (row.ms / 1_000);
    console.log(
      `| ${row.workers} | ${row.ms.toFixed(0)} | ${row.submitMs.toFixed(0)} | ${verifyMs(row).toFixed(0)} | ${(one / verifyMs(row)).toFixed(2)}x | ${row.mxQueries.toLocaleString('en')} | ${row.workerCpuS.toFixed(1)} | ${row.redisCpuS.toFixed(1)} | ${busy.toFixed(2)} of ${availableParallelism()} |`,
    );
  }
}

// Run on its own: node --import tsx bench/scale.ts
if (process.argv[1] === fileURLToPath(import.meta.url)) printScaleTable(await scaleBench());
