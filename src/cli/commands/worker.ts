import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PrometheusMetrics } from '../../adapters/prometheus/metrics.js';
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
import type { CliIo } from '../io.js';
import { cliLogger } from '../logger.js';
import { scaleOut } from '../scale-out.js';
import { checkBaseUrl, listenFailure } from './serve.js';
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
  readonly logLevel?: string;
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
  const chunkSize = integer(flags.chunkSize, '--chunk-size', 1, 50_000);
  const lockMs = integer(flags.lockMs, '--lock-ms', 1_000, 3_600_000);
  const concurrency = concurrencyOf({ ...flags, method: 'quick' });
  const engine = engineOptionsOf({ ...flags, method: 'quick' });
  const logger = await cliLogger(flags.logLevel, io.stderr);
  // The operations port is taken before anything touches Redis: a port in use is a flag to
  // fix, said in one line (exit 2), not a worker half started that must be torn down.
  const operations =
    port === undefined ? undefined : await listenForOperations(port, flags.host, flags.metrics);
  let service: Service | undefined;
  let shared: Awaited<ReturnType<typeof scaleOut>> | undefined;
  try {
    shared = await scaleOut({
      redis,
      work: true,
      ...optional('jobs', jobs),
      ...optional('smtpPerHost', smtpPerHost),
      ...optional('chunkSize', chunkSize),
      ...optional('lockMs', lockMs),
    });
    service = await openService(
      { db: '', redis },
      {
        engine: shared.engine(engine),
        logger,
        batch: {
          ...shared.batch,
          ...optional('concurrency', concurrency),
          ...callbackOptionsOf(flags),
          ...optional('baseUrl', flags.baseUrl),
        },
        ...(operations?.metrics === undefined ? {} : { observer: operations.metrics.observer }),
      },
    );
    const { resumed } = await service.start();
    operations?.serve(service);
    const where = operations === undefined ? '' : `; health and metrics on ${operations.url}`;
    // Ctrl-C and SIGTERM alike, caught before the line that says we run (see serve).
    const stopped = new Promise<void>((resolve) => io.onInterrupt(() => resolve()));
    logger.info(
      {
        event: 'start',
        store: storeName({ db: '', redis }),
        jobs_processing: resumed,
        ...(operations === undefined ? {} : { url: operations.url }),
      },
      `Worker on ${storeName({ db: '', redis })}: taking batch chunks (${resumed} jobs processing)${where}. Ctrl-C to stop.`,
    );
    await stopped;
    logger.info(
      { event: 'stop' },
      'Stopping: what was verified is stored; unfinished chunks go to other workers.',
    );
    return EXIT.ok;
  } finally {
    await operations?.close();
    await service?.stop();
    await service?.store.close();
    await shared?.close();
  }
}

/** The worker's operations server: listening from the start, serving once the service is up. */
interface OperationsServer {
  readonly url: string;
  readonly metrics: PrometheusMetrics | undefined;
  serve(service: Service): void;
  close(): Promise<void>;
}

/**
 * GET /health, /ready and /metrics for an orchestrator (a worker serves no API), listening
 * now: until the service is up, /ready (and every route) answers 503.
 */
async function listenForOperations(
  port: number,
  host: string,
  withMetrics: boolean | undefined,
): Promise<OperationsServer> {
  const { loadPrometheusMetrics } = await import('../../http/node-server.js');
  const { operationsRoutes } = await import('../../http/operations.js');
  const metrics = withMetrics === false ? undefined : await loadPrometheusMetrics();
  let routes: ReturnType<typeof operationsRoutes> | undefined;
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    if (routes === undefined) {
      response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
      response.end(JSON.stringify({ error: 'starting', message: 'The worker is starting.' }));
      return;
    }
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
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, resolve);
    });
  } catch (error) {
    throw listenFailure(error, host, port);
  }
  return {
    url: urlOf(server),
    metrics,
    serve(service) {
      routes = operationsRoutes(service, {
        health: true,
        ...(metrics === undefined ? {} : { metrics }),
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function urlOf(server: Server): string {
  const { address, port } = server.address() as AddressInfo;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}
