/**
 * verifyMany against its ceilings, in the same run: offline, a plain sequential `await
 * engine.verify()` loop over the same addresses; with DNS, the ideal of domains x latency /
 * concurrency against a loopback DNS server that answers after a set latency. Memory is
 * sampled while a generator streams the addresses, to show it does not grow with the input.
 */
import { createEngine, type Engine } from '../src/index.js';
import { startDnsChild } from './dns-process.js';

const OFFLINE_SIZE = Number(process.env.VERIFY_MANY_BENCH_SIZE ?? 1_000_000);
const ROUNDS = Number(process.env.VERIFY_MANY_BENCH_ROUNDS ?? 3);

function* stream(count: number, domains: number): Generator<string> {
  for (let i = 0; i < count; i++) yield `user${i}@domain${i % domains}.com`;
}

interface OfflineRow {
  readonly method: string;
  readonly loop: number;
  readonly many: number;
  /** Heap growth while verifyMany streamed 1/10 of the input, then all of it. */
  readonly heapTenthMb: number;
  readonly heapAllMb: number;
}

/**
 * Most heap still reachable (after a full collection) above the starting point while
 * verifyMany streams `count` addresses from a generator. Needs `node --expose-gc` (the bench
 * script passes it); without it the figure includes garbage and says little.
 */
async function heapGrowth(engine: Engine, method: 'quick' | 'standard', count: number) {
  const collect = (globalThis as { gc?: () => void }).gc ?? (() => {});
  collect();
  const start = process.memoryUsage().heapUsed;
  let peak = start;
  let seen = 0;
  const every = Math.max(1, Math.floor(count / 20));
  for await (const result of engine.verifyMany(stream(count, 1_000), { method })) {
    if (++seen % every === 0 && result.index >= 0) {
      collect();
      peak = Math.max(peak, process.memoryUsage().heapUsed);
    }
  }
  return (peak - start) / 1024 / 1024;
}

/** Counts what an iterable yields: the work a benchmark pass does with the results. */
async function drain(results: AsyncIterable<unknown>): Promise<number> {
  let count = 0;
  for await (const result of results) if (result !== undefined) count++;
  return count;
}

async function offlineRows(): Promise<OfflineRow[]> {
  const engine = createEngine({ offline: true });
  const addresses = [...stream(OFFLINE_SIZE, 1_000)];
  const rows: OfflineRow[] = [];
  for (const method of ['quick', 'standard'] as const) {
    let loop = 0;
    let many = 0;
    for (let round = 0; round <= ROUNDS; round++) {
      let started = performance.now();
      for (const address of addresses) await engine.verify(address, { method });
      const loopRate = addresses.length / ((performance.now() - started) / 1000);
      started = performance.now();
      await drain(engine.verifyMany(addresses, { method }));
      const manyRate = addresses.length / ((performance.now() - started) / 1000);
      // Round 0 warms up both.
      if (round > 0) {
        loop = Math.max(loop, loopRate);
        many = Math.max(many, manyRate);
      }
    }
    rows.push({
      method,
      loop,
      many,
      heapTenthMb: await heapGrowth(engine, method, OFFLINE_SIZE / 10),
      heapAllMb: await heapGrowth(engine, method, OFFLINE_SIZE),
    });
  }
  return rows;
}

interface DnsRow {
  readonly latencyMs: number;
  readonly concurrency: number;
  readonly ms: number;
  readonly idealMs: number;
  readonly mxQueries: number;
}

/** 50,000 addresses over 1,000 domains, each domain's MX answered after `latencyMs`. */
async function dnsRows(latencyMs: number): Promise<DnsRow[]> {
  const domains = 1_000;
  const rows: DnsRow[] = [];
  for (const concurrency of [5, 50]) {
    let best: DnsRow | undefined;
    for (let round = 0; round < ROUNDS; round++) {
      const server = await startDnsChild(domains, latencyMs);
      // A fresh engine each round: its DNS cache starts empty.
      const engine = createEngine({
        dnsOptions: { servers: [server.address], timeoutMs: 5_000, tries: 1 },
        dnsCanary: false,
      });
      const started = performance.now();
      await drain(engine.verifyMany(stream(50_000, domains), { method: 'quick', concurrency }));
      const ms = performance.now() - started;
      const mxQueries = await server.mxQueries();
      await server.stop();
      if (best === undefined || ms < best.ms) {
        const idealMs = (domains * latencyMs) / concurrency;
        best = { latencyMs, concurrency, ms, idealMs, mxQueries };
      }
    }
    rows.push(best as DnsRow);
  }
  return rows;
}

export async function verifyManyBench() {
  // Latency 0 is the floor this machine's CPU sets for the same work.
  return { offline: await offlineRows(), dns: [...(await dnsRows(1)), ...(await dnsRows(0))] };
}

export function printVerifyManyTable({
  offline,
  dns,
}: Awaited<ReturnType<typeof verifyManyBench>>) {
  console.log(
    `\nverifyMany, offline: ${OFFLINE_SIZE.toLocaleString('en')} addresses over 1,000 domains, best of ${ROUNDS}, beside a sequential \`await verify()\` loop (target: at least 80%)\n`,
  );
  console.log('| method | await loop /s | verifyMany /s | ratio | heap growth at 1/10 | at all |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const row of offline) {
    console.log(
      `| ${row.method} | ${Math.round(row.loop).toLocaleString('en')} | ${Math.round(row.many).toLocaleString('en')} | ${(row.many / row.loop).toFixed(2)} | ${row.heapTenthMb.toFixed(1)} MB | ${row.heapAllMb.toFixed(1)} MB |`,
    );
  }
  console.log(
    '\nverifyMany with DNS: 50,000 addresses over 1,000 domains, a loopback DNS server (its own process) answering after the latency (quick, best of rounds). Target: within 1.5x of the ideal; latency 0 is the CPU floor of the same work, which the ideal leaves out.\n',
  );
  console.log(
    '| DNS latency | concurrency (domains) | wall ms | ideal ms (domains x latency / concurrency) | vs ideal | MX queries |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|');
  for (const row of dns) {
    const versus = row.idealMs > 0 ? `${(row.ms / row.idealMs).toFixed(2)}x` : '-';
    console.log(
      `| ${row.latencyMs} ms | ${row.concurrency} | ${row.ms.toFixed(0)} | ${row.idealMs.toFixed(0)} | ${versus} | ${row.mxQueries.toLocaleString('en')} |`,
    );
  }
}
