import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsEndpoint } from '../../ports/observer.js';
import type { Service } from '../../service/service.js';
import { optional } from '../../optional.js';
import {
  callbackOptionsOf,
  concurrencyOf,
  engineOptionsOf,
  integer,
  type EngineFlags,
} from '../engine-options.js';
import { EXIT, UsageError, type ExitCode } from '../exit-codes.js';
import { line, type CliIo } from '../io.js';
import { scaleOut } from '../scale-out.js';
import { checkBaseUrl } from './serve.js';
import { openService, requireRedisUrl, storeName } from '../service-file.js';

export interface WorkerFlags extends Omit<EngineFlags, 'method'> {
  readonly redis?: string;
  /** The API's public URL: a worker that finishes a job writes its webhook's download_url. */
  readonly baseUrl?: string;
  readonly jobs?: string;
  readonly smtpPerHost?: string;
  readonly chunkSize?: string;
  readonly lockMs?: string;
  /** Serve GET /health, /ready and /metrics here (no API). */
  readonly port?: string;
  readonly host: string;
  readonly metrics?: boolean;
}

/**
 * `mailverdict worker --redis URL`: verifies batch chunks from the shared queue until Ctrl-C or
 * SIGTERM, then stops where it is (what it stored stays; the chunk it held goes to another
 * worker). Any number run at once, on any machine that reaches the Redis.
 */
export async function workerCommand(flags: WorkerFlags, io: CliIo): Promise<ExitCode> {
  if (flags.redis === undefined) {
    throw new UsageError('worker needs --redis <url>: the store and queue it shares with serve');
  }
  const redis = requireRedisUrl(flags.redis);
  if (flags.baseUrl !== undefined) checkBaseUrl(flags.baseUrl);
  const jobs = integer(flags.jobs, '--jobs', 1, 1_000);
  const smtpPerHost = integer(flags.smtpPerHost, '--smtp-per-host', 1, 100);
  const port = integer(flags.port, '--port', 0, 65_535);
  const concurrency = concurrencyOf({ ...flags, method: 'quick' });
  const metrics =
    port === undefined || flags.metrics === false
      ? undefined
      : await (await import('../../http/node-server.js')).loadPrometheusMetrics();
  const shared = await scaleOut({
    redis,
    work: true,
    ...optional('jobs', jobs),
    ...optional('smtpPerHost', smtpPerHost),
    ...optional('chunkSize', integer(flags.chunkSize, '--chunk-size', 1, 50_000)),
    ...optional('lockMs', integer(flags.lockMs, '--lock-ms', 1_000, 3_600_000)),
  });
  const service = await openService(
    { db: '', redis },
    {
      engine: shared.engine(engineOptionsOf({ ...flags, method: 'quick' })),
      batch: {
        ...shared.batch,
        ...optional('concurrency', concurrency),
        ...callbackOptionsOf(flags),
        ...optional('baseUrl', flags.baseUrl),
      },
      ...(metrics === undefined ? {} : { observer: metrics.observer }),
    },
  );
  let server: Server | undefined;
  try {
    const { resumed } = await service.start();
    if (port !== undefined) server = await serveOperations(service, port, flags.host, metrics);
    const where = server === undefined ? '' : `; health and metrics on ${urlOf(server)}`;
    // Ctrl-C and SIGTERM alike, caught before the line that says we run (see serve).
    const stopped = new Promise<void>((resolve) => io.onInterrupt(() => resolve()));
    line(
      io.stderr,
      `Worker on ${storeName({ db: '', redis })}: taking batch chunks (${resumed} jobs processing)${where}. Ctrl-C to stop.`,
    );
    await stopped;
    line(
      io.stderr,
      'Stopping: what was verified is stored; unfinished chunks go to other workers.',
    );
    return EXIT.ok;
  } finally {
    await new Promise((resolve) =>
      server === undefined ? resolve(undefined) : server.close(resolve),
    );
    await service.stop();
    await service.store.close();
    await shared.close();
  }
}

/** GET /health, /ready and /metrics for an orchestrator: a worker serves no API. */
async function serveOperations(
  service: Service,
  port: number,
  host: string,
  metrics: MetricsEndpoint | undefined,
): Promise<Server> {
  const { operationsRoutes } = await import('../../http/operations.js');
  const routes = operationsRoutes(service, {
    health: true,
    ...(metrics === undefined ? {} : { metrics }),
  });
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    const route = request.method === 'GET' ? routes.get(path) : undefined;
    if (route === undefined) {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ error: 'not_found', message: `No route ${path} on a worker.` }),
      );
      return;
    }
    route().then(
      (reply) => {
        response.writeHead(reply.status, reply.headers);
        response.end(typeof reply.body === 'string' ? reply.body : undefined);
      },
      () => {
        response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: 'internal_error', message: 'The check failed.' }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return server;
}

function urlOf(server: Server): string {
  const { address, port } = server.address() as AddressInfo;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}
