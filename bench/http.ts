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
  readonly non2xx: number;
  readonly errors: number;
  /** The server process's CPU time (user and system) per request answered, in microseconds. */
  readonly cpuMicros: number;
  /** The bare server's requests/s in the run just before this one: what `vs bare` divides by. */
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

/** One autocannon run: a warm-up of a second, then SECONDS of load on `path`. */
async function load(
  url: string,
  path: string,
  keys: readonly string[],
  cpu: () => Promise<number>,
) {
  let next = 0;
  const options: autocannon.Options = {
    url: `${url}${path}`,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: [
      {
        method: 'GET',
        path,
        // Round-robin over the keys: each sees a few hundred requests a minute at most. The
        // bare server gets keys too: every server is driven by the same requests.
        setupRequest: (request) => {
          const key = keys[next++ % keys.length] as string;
          return { ...request, headers: { ...request.headers, authorization: `Bearer ${key}` } };
        },
      },
    ],
  };
  await autocannon({ ...options, duration: 1 });
  const before = await cpu();
  const result = await autocannon(options);
  return { result, cpuMicros: ((await cpu()) - before) / Math.max(result.requests.total, 1) };
}

/**
 * Each mailverdict row is run right after a run of the bare server and compared with that run:
 * the machine is shared, and a ceiling measured once, a minute before or after, was taken under
 * another load (25,000 to 47,000 requests/s within the hour). The bare row gives their mean.
 */
export async function httpBench(): Promise<HttpRow[]> {
  const quick = '/v1/verify?email=alice@example.org&method=quick';
  const test = '/v1/verify?email=deliverable@example.com';
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
  const rowOf = (
    mode: Mode,
    label: string,
    { result, cpuMicros }: Awaited<ReturnType<typeof load>>,
    ceiling: number,
  ): HttpRow => ({
    server: servers[mode],
    request: label,
    perSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    cpuMicros,
    ceiling,
  });
  const bare = await startChild('bare');
  const bareRows: HttpRow[] = [];
  const rows: HttpRow[] = [];
  try {
    for (const [mode, label, path] of runs) {
      const ceiling = rowOf(
        'bare',
        'fixed JSON body',
        await load(bare.url, '/v1/verify?email=alice@example.org', bare.keys, bare.cpu),
        0,
      );
      bareRows.push(ceiling);
      const child = await startChild(mode);
      try {
        rows.push(
          rowOf(mode, label, await load(child.url, path, child.keys, child.cpu), ceiling.perSecond),
        );
      } finally {
        await child.stop();
      }
    }
  } finally {
    await bare.stop();
  }
  const mean = (pick: (row: HttpRow) => number) =>
    bareRows.reduce((sum, row) => sum + pick(row), 0) / bareRows.length;
  const perSecond = mean((row) => row.perSecond);
  const ceilingRow: HttpRow = {
    ...(bareRows[0] as HttpRow),
    perSecond,
    p50: mean((row) => row.p50),
    p99: mean((row) => row.p99),
    non2xx: bareRows.reduce((sum, row) => sum + row.non2xx, 0),
    errors: bareRows.reduce((sum, row) => sum + row.errors, 0),
    cpuMicros: mean((row) => row.cpuMicros),
    ceiling: perSecond,
  };
  return [ceilingRow, ...rows];
}

export function printHttpTable(rows: readonly HttpRow[]): void {
  console.log(
    `\nHTTP: GET /v1/verify, ${CONNECTIONS} connections for ${SECONDS} s each (autocannon), servers in their own processes, Node ${process.version}; every server gets the same requests, rotating the bearer keys of 1,000 keys of one enterprise account so that no key meets its 300 a minute; each row is compared with a run of the bare server just before it (the bare row: their mean)\n`,
  );
  console.log(
    '| server | request | requests/s | vs bare | p50 ms | p99 ms | server CPU/request | non-2xx |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  for (const row of rows) {
    console.log(
      `| ${row.server} | ${row.request} | ${Math.round(row.perSecond).toLocaleString('en')} | ${(row.perSecond / row.ceiling).toFixed(2)}x | ${row.p50} | ${row.p99} | ${row.cpuMicros.toFixed(1)} us | ${row.non2xx + row.errors} |`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) printHttpTable(await httpBench());
