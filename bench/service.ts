/**
 * Service verify throughput: the service core (credits reserved and settled, filters matched;
 * authentication is not in the loop) on the memory and SQLite stores, beside the bare engine on
 * the same addresses, in the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, createMemoryStore, createService, type Store } from '../src/index.js';
import { createSqliteStore } from '../src/sqlite.js';

export interface ServiceRow {
  readonly input: string;
  readonly count: number;
  /** Verifies per second: the bare engine, then each store. */
  readonly bare: number;
  readonly stores: readonly { readonly store: string; readonly perSecond: number }[];
}

const SIZE = Number(process.env.SERVICE_BENCH_SIZE ?? 20_000);
const ROUNDS = Number(process.env.SERVICE_BENCH_ROUNDS ?? 3);
const WARM_UP = 1000;

export async function serviceBench(corpus: readonly string[]): Promise<ServiceRow[]> {
  const ordinary = corpus.slice(0, SIZE);
  const inputs: [string, string[]][] = [
    ['corpus addresses (reserve, verify, settle)', ordinary],
    ['a test address (free)', ordinary.map(() => 'deliverable@example.com')],
    [
      'an address a domain filter blocks (free)',
      ordinary.map((_, i) => `u${i}@blocked.example.org`),
    ],
  ];
  const engine = createEngine({ offline: true });
  const dir = mkdtempSync(join(tmpdir(), 'mailverdict-bench-'));
  const stores: [string, () => Store][] = [
    ['memory', () => createMemoryStore()],
    ['SQLite (file, WAL)', () => createSqliteStore(join(dir, 'bench.db'))],
  ];
  const rows: ServiceRow[] = inputs.map(([input, addresses]) => ({
    input,
    count: addresses.length,
    bare: 0,
    stores: [],
  }));
  try {
    for (const [index, [, addresses]] of inputs.entries()) {
      const bare = await rate(addresses, (a) => engine.verify(a, { method: 'quick' }));
      rows[index] = { ...(rows[index] as ServiceRow), bare };
    }
    for (const [storeName, makeStore] of stores) {
      const store = makeStore();
      const service = createService({ engine, store });
      const account = await service.admin.createAccount({
        email: 'bench@example.org',
        plan: 'enterprise',
        credits: (ROUNDS + 1) * (ordinary.length + WARM_UP),
      });
      const caller = { accountId: account.id };
      await service.createFilter(caller, {
        value: 'blocked.example.org',
        type: 'domain',
        action: 'block',
      });
      for (const [index, [, addresses]] of inputs.entries()) {
        const perSecond = await rate(addresses, (a) =>
          service.verify(caller, a, { method: 'quick' }),
        );
        const row = rows[index] as ServiceRow;
        rows[index] = { ...row, stores: [...row.stores, { store: storeName, perSecond }] };
      }
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/**
 * Verifies per second: the best of ROUNDS sequential passes (one request after another, as a
 * server's), after a warm-up on the first thousand. One pass of a free input lasts a few tens
 * of milliseconds, where a single garbage collection or recompilation moves the figure.
 */
async function rate(addresses: readonly string[], verify: (a: string) => Promise<unknown>) {
  for (const address of addresses.slice(0, WARM_UP)) await verify(address);
  let best = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    for (const address of addresses) await verify(address);
    best = Math.max(best, addresses.length / ((performance.now() - started) / 1000));
  }
  return best;
}

export function printServiceTable(rows: readonly ServiceRow[]): void {
  const storeNames = rows[0]?.stores.map((s) => s.store) ?? [];
  console.log(
    `\nService verify, offline quick: ${(rows[0]?.count ?? 0).toLocaleString('en')} verifies per input, sequential, best of ${ROUNDS}; ratios to the bare engine on the same addresses\n`,
  );
  console.log(
    `| input | bare engine/s | ${storeNames.map((n) => `service on ${n}/s`).join(' | ')} |`,
  );
  console.log(`|---|---:|${storeNames.map(() => '---:').join('|')}|`);
  for (const row of rows) {
    const cells = row.stores.map(
      (s) =>
        `${Math.round(s.perSecond).toLocaleString('en')} (${(s.perSecond / row.bare).toFixed(3)}x)`,
    );
    console.log(
      `| ${row.input} | ${Math.round(row.bare).toLocaleString('en')} | ${cells.join(' | ')} |`,
    );
  }
}
