/**
 * Service verify throughput: the service core (credits reserved and settled, filters matched;
 * authentication is not in the loop) on the memory and SQLite stores, beside the bare engine on
 * the same addresses, in the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, type Store } from '../src/index.js';
import { createMemoryStore, createService } from '../src/service.js';
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

/** Filter matching beside an account's IP filters: verifies/s without any, and with 10,000. */
export interface IpFilterRow {
  readonly input: string;
  readonly store: string;
  readonly none: number;
  readonly many: number;
}

const IP_FILTERS = 10_000;
const IP_BENCH_SIZE = Number(process.env.IP_FILTER_BENCH_SIZE ?? 5_000);

/**
 * The cost of matching does not grow with the number of filters. The same
 * addresses on an account without filters and on one with 10,000 IP filters (IPv4 hosts and
 * /24s, IPv6 hosts, /64s and /48s; none matches, so both verify and charge in full): online
 * on an in-memory Dns, where each address's MX hosts' IPv4 and IPv6 addresses are looked up
 * and matched, and offline, where no IP work is done at all. Target: within 2x.
 */
export async function ipFilterBench(): Promise<IpFilterRow[]> {
  const domains = 500;
  const zones = Object.fromEntries(
    Array.from({ length: domains }, (_, i) => [`d${i}.example`, [`mx.d${i}.example`]]),
  );
  const hosts = Object.fromEntries(
    Array.from({ length: domains }, (_, i) => [
      `mx.d${i}.example`,
      [`203.0.${i >> 8}.${i & 255}`, `2001:db8:1:${i.toString(16)}::25`],
    ]),
  );
  const { createMemoryDns } = await import('../src/dns/memory-dns.js');
  const engines = [
    [
      'online (in-memory Dns): MX host IPs matched',
      createEngine({ dns: createMemoryDns(zones, hosts) }),
    ],
    ['offline: no IP work', createEngine({ offline: true })],
  ] as const;
  const addresses = Array.from(
    { length: IP_BENCH_SIZE },
    (_, i) => `u${i}@d${i % domains}.example`,
  );
  const filters = Array.from({ length: IP_FILTERS }, (_, i) => {
    const [a, b] = [(i >> 8) & 255, i & 255];
    switch (i % 5) {
      case 0:
        return `10.${a}.${b}.1`;
      case 1:
        return `10.${a}.${b}.0/24`;
      case 2:
        return `2001:db8:ffff:${i.toString(16)}::1`;
      case 3:
        return `2001:db8:eeee:${i.toString(16)}::/64`;
      default:
        return `2001:db9:${i.toString(16)}::/48`;
    }
  });
  const dir = mkdtempSync(join(tmpdir(), 'mailverdict-ip-bench-'));
  const stores: [string, () => Store][] = [
    ['memory', () => createMemoryStore()],
    ['SQLite (file, WAL)', () => createSqliteStore(join(dir, `ip-${Math.random()}.db`))],
  ];
  const rows: IpFilterRow[] = [];
  try {
    for (const [input, engine] of engines) {
      for (const [storeName, makeStore] of stores) {
        const store = makeStore();
        const service = createService({ engine, store });
        const credits = (2 * ROUNDS + 1) * (addresses.length + WARM_UP);
        const plain = await service.admin.createAccount({ email: 'a@example.org', credits });
        const filtered = await service.admin.createAccount({ email: 'b@example.org', credits });
        for (const value of filters) {
          await service.createFilter(
            { accountId: filtered.id },
            { value, type: 'ip_address', action: 'block' },
          );
        }
        const on = (accountId: string) => (a: string) =>
          service.verify({ accountId }, a, { method: 'quick' });
        const [none = 0, many = 0] = await ratesInterleaved(addresses, [
          on(plain.id),
          on(filtered.id),
        ]);
        rows.push({ input, store: storeName, none, many });
        await store.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/**
 * Verifies per second of each of `verifiers` on the same addresses: the best of 2 x ROUNDS
 * passes each, taken in turn (one of each, then again), so that a slow moment of a busy
 * machine falls on both sides of a ratio rather than on one.
 */
async function ratesInterleaved(
  addresses: readonly string[],
  verifiers: readonly ((a: string) => Promise<unknown>)[],
): Promise<number[]> {
  for (const verify of verifiers) {
    for (const address of addresses.slice(0, WARM_UP)) await verify(address);
  }
  const best = verifiers.map(() => 0);
  for (let round = 0; round < 2 * ROUNDS; round++) {
    for (const [index, verify] of verifiers.entries()) {
      const started = performance.now();
      for (const address of addresses) await verify(address);
      const perSecond = addresses.length / ((performance.now() - started) / 1000);
      best[index] = Math.max(best[index] ?? 0, perSecond);
    }
  }
  return best;
}

export function printIpFilterTable(rows: readonly IpFilterRow[]): void {
  console.log(
    `\nFilter matching with ${IP_FILTERS.toLocaleString('en')} IP filters beside none (charged quick verifies, ${IP_BENCH_SIZE.toLocaleString('en')} per pass, sequential, best of ${2 * ROUNDS} passes taken in turn; target within 2x)\n`,
  );
  console.log('| input | store | no filters/s | 10,000 IP filters/s | ratio |');
  console.log('|---|---|---:|---:|---:|');
  for (const row of rows) {
    console.log(
      `| ${row.input} | ${row.store} | ${Math.round(row.none).toLocaleString('en')} | ${Math.round(row.many).toLocaleString('en')} | ${(row.many / row.none).toFixed(2)}x |`,
    );
  }
}
