/**
 * Batch jobs end to end (issue 12): a 50,000-address job over 5,000 domains against a
 * loopback DNS server (its own process) answering after 20 ms, on the durable SQLite store,
 * each job in a fresh process so that its peak RSS is its own; then its download streamed in
 * each format, with the heap it grew by while streaming.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { VERIFY_MANY_CONCURRENCY } from '../src/engine/verify-many.js';
import { startDnsChild } from './dns-process.js';

const SIZE = Number(process.env.BATCH_BENCH_SIZE ?? 50_000);
const DOMAINS = Number(process.env.BATCH_BENCH_DOMAINS ?? 5_000);
const LATENCY_MS = Number(process.env.BATCH_BENCH_LATENCY_MS ?? 20);

interface Download {
  readonly format: string;
  readonly mb: number;
  readonly ms: number;
  readonly heapGrowthMb: number;
  readonly retainedMb: number;
}

export interface BatchRow {
  readonly method: 'quick' | 'standard';
  readonly ms: number;
  readonly submitMs: number;
  readonly idealMs: number;
  readonly mxQueries: number;
  readonly peakRssMb: number;
  readonly rssBeforeMb: number;
  readonly downloads: readonly Download[];
}

export async function batchBench(): Promise<BatchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'mailverdict-batch-bench-'));
  const rows: BatchRow[] = [];
  try {
    for (const method of ['quick', 'standard'] as const) {
      const dns = await startDnsChild(DOMAINS, LATENCY_MS);
      const plan = {
        dns: dns.address,
        method,
        domains: DOMAINS,
        size: SIZE,
        path: join(dir, `${method}.db`),
      };
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [
          '--expose-gc',
          '--import',
          'tsx',
          fileURLToPath(new URL('./batch-job.ts', import.meta.url)),
          JSON.stringify(plan),
        ],
        { maxBuffer: 1 << 20 },
      );
      const mxQueries = await dns.mxQueries();
      await dns.stop();
      const result = JSON.parse(stdout.trim().split('\n').at(-1) as string) as Omit<
        BatchRow,
        'method' | 'idealMs' | 'mxQueries'
      >;
      rows.push({
        method,
        ...result,
        idealMs: (DOMAINS * LATENCY_MS) / VERIFY_MANY_CONCURRENCY,
        mxQueries,
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

export function printBatchTable(rows: readonly BatchRow[]) {
  console.log(
    `\nBatch jobs: ${SIZE.toLocaleString('en')} addresses over ${DOMAINS.toLocaleString('en')} domains, a loopback DNS server (its own process) answering after ${LATENCY_MS} ms, SQLite file store, each job in a fresh process (submit to completed, results stored and settled as they land)\n`,
  );
  console.log(
    `| method | wall ms | ideal ms (domains x latency / ${VERIFY_MANY_CONCURRENCY}) | vs ideal | of which submit ms | MX queries | peak RSS MB (process at start) |`,
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const row of rows) {
    console.log(
      `| ${row.method} | ${row.ms.toFixed(0)} | ${row.idealMs.toFixed(0)} | ${(row.ms / row.idealMs).toFixed(2)}x | ${row.submitMs.toFixed(0)} | ${row.mxQueries.toLocaleString('en')} | ${row.peakRssMb.toFixed(0)} (${row.rssBeforeMb.toFixed(0)}) |`,
    );
  }
  console.log(
    '\nBatch downloads, streamed from the store a page (500 records) at a time: peak heap growth while streaming (garbage included), and what the stream retains (heap after a full GC every 5,000 records)\n',
  );
  console.log('| method | format | size MB | ms | peak heap growth MB | retained MB |');
  console.log('|---|---|---:|---:|---:|---:|');
  for (const row of rows) {
    for (const d of row.downloads) {
      console.log(
        `| ${row.method} | ${d.format} | ${d.mb.toFixed(1)} | ${d.ms.toFixed(0)} | ${d.heapGrowthMb.toFixed(1)} | ${d.retainedMb.toFixed(2)} |`,
      );
    }
  }
}

// Run on its own: node --import tsx bench/batch.ts
if (process.argv[1] === fileURLToPath(import.meta.url)) printBatchTable(await batchBench());
