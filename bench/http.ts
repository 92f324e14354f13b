/**
 * HTTP throughput: GET /v1/verify through mailverdict/node on the SQLite store, beside a bare
 * node:http server answering a fixed JSON body (the ceiling: what node:http alone costs on
 * this machine). Each server runs in its own process; autocannon drives it from this one.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const SECONDS = Number(process.env.HTTP_BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.HTTP_BENCH_CONNECTIONS ?? 50);
const CHILD = fileURLToPath(new URL('./http-child.ts', import.meta.url));

export interface HttpRow {
  readonly server: string;
  readonly request: string;
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  /** Answers that were not 2xx, and requests that got no answer. */
  readonly failed: number;
  /** The server process's CPU time (user and system) per request answered, in microseconds. */
  readonly cpuMicros: number;
  /**
   * This process's CPU time per request while autocannon drove the row: the load generator
   * shares the machine's cores with the server, and it is what bounds the bare server here.
   */
  readonly loadCpuMicros: number;
  /** The bare server's requests/s in the slices between this row's: what `vs bare` divides by. */
  readonly ceiling: number;
}

type Mode = 'bare' | 'sqlite' | 'memory';

async function startChild(mode: Mode) {
  const child = fork(CHILD, [mode], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  const ready = await new Promise<{ url: string; keys: string[] }>((resolve, reject) => {
    child.once('message', (message) => resolve(message as { url: string; keys: string[] }));
    child.once('exit', (code) => reject(new Error(`bench server exited ${code}`)));
  });
  return {
    ...ready,
    /** The server's CPU time so far, in microseconds. */
    cpu: () =>
      new Promise<number>((resolve) => {
        child.once('message', (message) => {
          const { user, system } = (message as { cpu: NodeJS.CpuUsage }).cpu;
          resolve(user + system);
        });
        child.send('cpu');
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.disconnect();
      }),
  };
}

type Server = Awaited<ReturnType<typeof startChild>>;

/** What a server did in one or more runs of autocannon. */
interface Tally {
  readonly requests: number;
  readonly seconds: number;
  readonly cpuMicros: number;
  readonly loadCpuMicros: number;
  readonly p50s: readonly number[];
  readonly p99s: readonly number[];
  readonly failed: number;
}

const NO_RUNS: Tally = {
  requests: 0,
  seconds: 0,
  cpuMicros: 0,
  loadCpuMicros: 0,
  p50s: [],
  p99s: [],
  failed: 0,
};

/** One autocannon run of `seconds` on `path`, added to `tally`. */
async function load(server: Server, path: string, seconds: number, tally: Tally): Promise<Tally> {
  let next = 0;
  const before = await server.cpu();
  const loadBefore = process.cpuUsage();
  const result = await autocannon({
    url: `${server.url}${path}`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        method: 'GET',
        path,
        // Round-robin over the keys: each sees a few hundred requests a minute at most. The
        // bare server gets keys too: every server is driven by the same requests.
        setupRequest: (request) => {
          const key = server.keys[next++ % server.keys.length] as string;
          return { ...request, headers: { ...request.headers, authorization: `Bearer ${key}` } };
        },
      },
    ],
  });
  const loadCpu = process.cpuUsage(loadBefore);
  return {
    requests: tally.requests + result.requests.total,
    seconds: tally.seconds + result.duration,
    cpuMicros: tally.cpuMicros + ((await server.cpu()) - before),
    loadCpuMicros: tally.loadCpuMicros + loadCpu.user + loadCpu.system,
    p50s: [...tally.p50s, result.latency.p50],
    p99s: [...tally.p99s, result.latency.p99],
    failed: tally.failed + result.non2xx + result.errors,
  };
}

/** Slices each mailverdict row and its ceiling take turns in (see httpBench). */
const SLICES = 5;

/**
 * Each mailverdict row takes turns with the bare server, SLICES slices each, and is compared
 * with the bare server's slices in between: the machine is shared, and a ceiling measured once,
 * a minute away from the row, was taken under another load (the bare server read 25,000 to
 * 47,000 requests/s within the hour, and one row 0.29x and 0.41x in two runs of the same code).
 * The bare row sums all its slices.
 */
export async function httpBench(): Promise<HttpRow[]> {
  const quick = '/v1/verify?email=alice@example.org&method=quick';
  const test = '/v1/verify?email=deliverable@example.com';
  const barePath = '/v1/verify?email=alice@example.org';
  const runs: [mode: Exclude<Mode, 'bare'>, label: string, path: string][] = [
    ['sqlite', 'offline quick, an ordinary address', quick],
    ['sqlite', 'a test address (free)', test],
    ['memory', 'offline quick, an ordinary address', quick],
    ['memory', 'a test address (free)', test],
  ];
  const servers: Record<Mode, string> = {
    bare: 'bare node:http',
    sqlite: 'mailverdict/node + SQLite',
    memory: 'mailverdict/node + memory store',
  };
  const rowOf = (mode: Mode, label: string, tally: Tally, ceiling: number): HttpRow => {
    const perSecond = tally.requests / tally.seconds;
    return {
      server: servers[mode],
      request: label,
      perSecond,
      p50: median(tally.p50s),
      p99: median(tally.p99s),
      failed: tally.failed,
      cpuMicros: tally.cpuMicros / Math.max(tally.requests, 1),
      loadCpuMicros: tally.loadCpuMicros / Math.max(tally.requests, 1),
      ceiling: ceiling === 0 ? perSecond : ceiling,
    };
  };
  const slice = SECONDS / SLICES;
  const bare = await startChild('bare');
  let bareTally = NO_RUNS;
  const rows: HttpRow[] = [];
  try {
    await load(bare, barePath, 1, NO_RUNS);
    for (const [mode, label, path] of runs) {
      const child = await startChild(mode);
      try {
        await load(child, path, 1, NO_RUNS);
        let ceiling = NO_RUNS;
        let tally = NO_RUNS;
        for (let i = 0; i < SLICES; i++) {
          ceiling = await load(bare, barePath, slice, ceiling);
          tally = await load(child, path, slice, tally);
        }
        rows.push(rowOf(mode, label, tally, ceiling.requests / ceiling.seconds));
        bareTally = {
          requests: bareTally.requests + ceiling.requests,
          seconds: bareTally.seconds + ceiling.seconds,
          cpuMicros: bareTally.cpuMicros + ceiling.cpuMicros,
          loadCpuMicros: bareTally.loadCpuMicros + ceiling.loadCpuMicros,
          p50s: [...bareTally.p50s, ...ceiling.p50s],
          p99s: [...bareTally.p99s, ...ceiling.p99s],
          failed: bareTally.failed + ceiling.failed,
        };
      } finally {
        await child.stop();
      }
    }
  } finally {
    await bare.stop();
  }
  return [rowOf('bare', 'fixed JSON body', bareTally, 0), ...rows];
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

export function printHttpTable(rows: readonly HttpRow[]): void {
  console.log(
    `\nHTTP: GET /v1/verify, ${CONNECTIONS} connections for ${SECONDS} s a row (autocannon), servers in their own processes, Node ${process.version}; every server gets the same requests, rotating the bearer keys of 1,000 keys of one enterprise account so that no key meets its 300 a minute; each row takes turns with the bare server in ${SLICES} slices and is compared with the bare slices in between (the bare row: all of them)\n`,
  );
  console.log(
    '| server | request | requests/s | vs bare | p50 ms | p99 ms | server CPU/request | autocannon CPU/request | non-2xx |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const row of rows) {
    console.log(
      `| ${row.server} | ${row.request} | ${Math.round(row.perSecond).toLocaleString('en')} | ${(row.perSecond / row.ceiling).toFixed(2)}x | ${row.p50} | ${row.p99} | ${row.cpuMicros.toFixed(1)} us | ${row.loadCpuMicros.toFixed(1)} us | ${row.failed} |`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) printHttpTable(await httpBench());
