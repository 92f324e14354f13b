/**
 * Service verify throughput: the service core (authorization already done, credits reserved and
 * settled, filters matched) on the memory and SQLite stores, beside the bare engine, on the same
 * addresses in the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, createMemoryStore, createService, type Store } from '../src/index.js';
import { createSqliteStore } from '../src/sqlite.js';

export interface ServiceRow {
  readonly name: string;
  readonly perSecond: number;
}

const SIZE = Number(process.env.SERVICE_BENCH_SIZE ?? 20_000);

export async function serviceBench(corpus: readonly string[]): Promise<ServiceRow[]> {
  const addresses = corpus.slice(0, SIZE);
  const engine = createEngine({ offline: true });
  const dir = mkdtempSync(join(tmpdir(), 'mailverdict-bench-'));
  const rows: ServiceRow[] = [];
  try {
    rows.push({
      name: 'bare engine verify quick',
      perSecond: await rate(addresses, (address) => engine.verify(address, { method: 'quick' })),
    });
    const stores: [string, () => Store][] = [
      ['memory', () => createMemoryStore()],
      ['SQLite (file, WAL)', () => createSqliteStore(join(dir, 'bench.db'))],
    ];
    for (const [storeName, makeStore] of stores) {
      const store = makeStore();
      const service = createService({ engine, store });
      const account = await service.admin.createAccount({
        email: 'bench@example.org',
        plan: 'enterprise',
        credits: 10 * (SIZE + 1000),
      });
      await service.createFilter(
        { accountId: account.id },
        { value: 'blocked.example.org', type: 'domain', action: 'block' },
      );
      const caller = { accountId: account.id };
      const verify = (address: string) => service.verify(caller, address, { method: 'quick' });
      rows.push({
        name: `service verify quick, ${storeName}: corpus (reserve + settle)`,
        perSecond: await rate(addresses, verify),
      });
      rows.push({
        name: `service verify quick, ${storeName}: test address (free)`,
        perSecond: await rate(
          addresses.map(() => 'deliverable@example.com'),
          verify,
        ),
      });
      rows.push({
        name: `service verify quick, ${storeName}: filtered address (free)`,
        perSecond: await rate(
          addresses.map((_, i) => `user${i}@blocked.example.org`),
          verify,
        ),
      });
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/**
 * Addresses per second of one sequential pass (one request after another, as a server's),
 * after a warm-up on the first thousand.
 */
async function rate(addresses: readonly string[], verify: (a: string) => Promise<unknown>) {
  for (const address of addresses.slice(0, 1000)) await verify(address);
  const started = performance.now();
  for (const address of addresses) await verify(address);
  return addresses.length / ((performance.now() - started) / 1000);
}

export function printServiceTable(rows: readonly ServiceRow[]): void {
  const bare = rows[0]?.perSecond ?? 1;
  console.log(
    `\nService verify: ${SIZE.toLocaleString('en')} addresses each, sequential, offline quick\n`,
  );
  console.log('| path | verifies/s | vs bare engine |');
  console.log('|---|---:|---:|');
  for (const row of rows) {
    console.log(
      `| ${row.name} | ${Math.round(row.perSecond).toLocaleString('en')} | ${(row.perSecond / bare).toFixed(3)}x |`,
    );
  }
}
