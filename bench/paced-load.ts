/**
 * A paced client in its own process (bench/availability.ts): GET /v1/verify at a fixed rate,
 * open loop, rotating bearer keys. Each request is sent at its scheduled time whether or not
 * the earlier ones were answered, and its latency runs from that scheduled time to the end
 * of its answer: a server that stalls is charged for every request it kept waiting, not only
 * for the few a closed-loop client (autocannon with connections) would have sent meanwhile.
 *
 * Messages: `{url, keys, rate, path}` starts it; `{window: [from, to]}` (epoch ms, as `now()`)
 * answers the latencies of the requests scheduled inside; `'stop'` ends it.
 */
import { Agent, request } from 'node:http';

interface Start {
  readonly url: string;
  readonly keys: readonly string[];
  readonly rate: number;
  readonly path: string;
}

interface Sample {
  readonly scheduledAt: number;
  readonly ms: number;
  /**
   * How late this process sent it, its own share of `ms`: a timer of this process that ran
   * late on a busy machine, not the server.
   */
  readonly sentLateMs: number;
  /** The answer's status, or the error's code when there was none. */
  readonly status: string;
}

/** Epoch milliseconds with sub-millisecond precision, comparable across processes. */
const now = () => performance.timeOrigin + performance.now();
/** An answer later than this counts as failed (and ends the request). */
const REQUEST_TIMEOUT_MS = 30_000;

const samples: Sample[] = [];
/** Scheduled times of the requests not answered yet. */
const inFlight = new Set<number>();
let timer: NodeJS.Timeout | undefined;

function start({ url, keys, rate, path }: Start): void {
  // Enough sockets that a stall of seconds at this rate queues in the server, not in the
  // agent. A socket left idle is closed here after 2 s, before the server's keep-alive timeout
  // (5 s) closes it: a request sent on a socket the server is closing is reset (ECONNRESET),
  // which is the client's race, not an answer of the server's.
  const agent = new Agent({ keepAlive: true, maxSockets: 1024, timeout: 2_000 });
  const target = new URL(path, url);
  const interval = 1000 / rate;
  let next = now();
  let sent = 0;
  const send = (scheduledAt: number) => {
    const key = keys[sent++ % keys.length] as string;
    const sentLateMs = now() - scheduledAt;
    inFlight.add(scheduledAt);
    const done = (status: string) => {
      if (!inFlight.delete(scheduledAt)) return;
      samples.push({ scheduledAt, ms: now() - scheduledAt, sentLateMs, status });
    };
    const req = request(target, {
      agent,
      headers: { authorization: `Bearer ${key}` },
      timeout: REQUEST_TIMEOUT_MS,
    });
    req.once('response', (response) => {
      response.resume();
      response.once('end', () => done(String(response.statusCode)));
      response.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? 'error'));
    });
    req.once('timeout', () =>
      req.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })),
    );
    req.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? 'error'));
    req.end();
  };
  const tick = () => {
    const t = now();
    while (next <= t) {
      send(next);
      next += interval;
    }
    timer = setTimeout(tick, Math.max(0, next - now()));
  };
  tick();
}

/** The latencies of the requests scheduled in [from, to), once every one of them is answered. */
async function windowOf(from: number, to: number) {
  while ([...inFlight].some((scheduledAt) => scheduledAt < to)) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const inside = samples.filter((s) => s.scheduledAt >= from && s.scheduledAt < to);
  const ms = inside.map((s) => s.ms).sort((a, b) => a - b);
  const late = inside.map((s) => s.sentLateMs).sort((a, b) => a - b);
  const at = (sorted: number[], q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const failures = new Map<string, number>();
  for (const { status } of inside) {
    if (status !== '200') failures.set(status, (failures.get(status) ?? 0) + 1);
  }
  return {
    requests: inside.length,
    failed: [...failures.values()].reduce((sum, n) => sum + n, 0),
    /** What the failures were: `429 x2, ECONNRESET x1`. */
    failures: [...failures].map(([status, n]) => `${status} x${n}`).join(', '),
    p50: at(ms, 0.5),
    p99: at(ms, 0.99),
    max: ms.at(-1) ?? 0,
    sentLateP99: at(late, 0.99),
    sentLateMax: late.at(-1) ?? 0,
  };
}

process.on('message', (message: Start | { window: [number, number] } | 'stop' | 'now') => {
  if (message === 'stop') {
    clearTimeout(timer);
    process.exit(0);
  } else if (message === 'now') {
    process.send?.({ now: now() });
  } else if ('window' in message) {
    void windowOf(...message.window).then((answer) => process.send?.(answer));
  } else {
    start(message);
    process.send?.({ started: true });
  }
});
