import ipaddr from 'ipaddr.js';
import { canonicalRange } from '../../service/ip-ranges.js';
import { EXIT, UsageError, type ExitCode } from '../exit-codes.js';
import { optional } from '../../optional.js';
import {
  callbackOptionsOf,
  engineOptionsOf,
  integer,
  type EngineFlags,
} from '../engine-options.js';
import type { Service } from '../../service/service.js';
import type { ServeOptions } from '../../http/node-server.js';
import { HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS } from '../../http/server-limits.js';
import type { CliIo } from '../io.js';
import { cliLogger } from '../logger.js';
import type { Logger } from '../../ports/logger.js';
import { scaleOut } from '../scale-out.js';
import { openService, requireRedisUrl, storeName, type FileFlags } from '../service-file.js';

export interface ServeFlags extends FileFlags, Omit<EngineFlags, 'method'> {
  readonly port: string;
  readonly host: string;
  readonly baseUrl?: string;
  readonly trustedProxy?: string[];
  readonly ownerEmail: string;
  readonly credits: string;
  /** `--no-metrics` turns GET /metrics off. */
  readonly metrics?: boolean;
  /** With --redis: verify batch chunks in this process too, not only in workers. */
  readonly work?: boolean;
  readonly chunkSize?: string;
  readonly maxBodyBytes?: string;
  readonly maxJsonDepth?: string;
  readonly maxJsonElements?: string;
  readonly maxHeaders?: string;
  readonly maxHeaderBytes?: string;
  readonly headersTimeout?: string;
  readonly requestTimeout?: string;
  readonly keepAliveTimeout?: string;
  readonly writeTimeout?: string;
  /** The slice budget of batch work (batch.sliceMs, and the SQLite store's). */
  readonly sliceMs?: string;
  readonly logLevel?: string;
  /** One log line per request. */
  readonly accessLog?: boolean;
}

/** First start: an account with credits on the enterprise plan (it is your own server). */
const FIRST_PLAN = 'enterprise';

/**
 * `mailverdict serve`: the /v1 API on a SQLite file, or on Redis (`--redis`) beside other API
 * processes, with batch jobs queued for `mailverdict worker` processes. The first start creates
 * an account and prints its private key once (stdout); every start resumes interrupted batch
 * jobs. Ctrl-C or SIGTERM finishes the requests in flight and leaves running jobs to resume.
 */
export async function serveCommand(flags: ServeFlags, io: CliIo): Promise<ExitCode> {
  // Every flag is checked before anything is opened or created.
  const port = integer(flags.port, '--port', 0, 65_535) as number;
  const credits = integer(flags.credits, '--credits', 0, Number.MAX_SAFE_INTEGER) as number;
  if (flags.baseUrl !== undefined) checkBaseUrl(flags.baseUrl);
  else if (isWildcard(flags.host)) {
    // Every job keeps the base URL it was submitted under: a loopback link kept for clients
    // elsewhere would stay wrong, so say so now rather than store it.
    throw new UsageError(
      `--host ${flags.host} listens on every address, so none is the API's: give --base-url, the URL clients reach it by (batch download links are built on it)`,
    );
  }
  for (const range of flags.trustedProxy ?? []) {
    if (canonicalRange(range) === undefined) {
      throw new UsageError(
        `--trusted-proxy must be an IP address or CIDR range, got ${JSON.stringify(range)}`,
      );
    }
  }
  const limits = serverLimitsOf(flags);
  // A slice over a second would hold the server for as long: what slices are there to stop.
  const sliceMs = integer(flags.sliceMs, '--slice-ms', 1, 1_000);
  const logger = await cliLogger(flags.logLevel, io.stderr);
  const { listeningBaseUrl, loadPrometheusMetrics, serve } =
    await import('../../http/node-server.js');
  // On by default: every label comes from a closed set (method, state, reason, reply class,
  // route), so /metrics tells volumes, never accounts, keys or addresses; and serve listens on
  // loopback unless told otherwise. The engine's observer reaches the service built over it.
  const metrics = flags.metrics === false ? undefined : await loadPrometheusMetrics();
  const shared =
    flags.redis === undefined
      ? undefined
      : await scaleOut({
          redis: requireRedisUrl(flags.redis),
          work: flags.work === true,
          ...optional('chunkSize', integer(flags.chunkSize, '--chunk-size', 1, 50_000)),
        });
  if (flags.work === true && shared === undefined) {
    throw new UsageError('--work is for --redis: without it, serve verifies every job itself');
  }
  const engine = engineOptionsOf({ ...flags, method: 'standard' });
  const service = await openService(flags, {
    engine: shared?.engine(engine) ?? engine,
    logger,
    ...optional('sliceMs', sliceMs),
    ...(metrics === undefined ? {} : { observer: metrics.observer }),
    // The webhook's download_url too, not only the answers of GET /v1/verify/{id}: without
    // it a completed job's event pointed at http://localhost/.
    batch: { ...shared?.batch, ...callbackOptionsOf(flags), ...optional('baseUrl', flags.baseUrl) },
  });
  try {
    // Listening comes first: a port in use or a bad --host fails before the first start
    // creates an account whose key, shown once, would then belong to a server that never ran,
    // and before interrupted jobs are taken up.
    let server;
    try {
      server = await serve(service, {
        port,
        hostname: flags.host,
        metrics: metrics ?? false,
        logger,
        accessLog: flags.accessLog === true,
        // Started below, once listening: a port in use is said before anything is resumed
        // or queued (and, at scale, before a queue connection is opened to be torn down).
        startService: false,
        ...(flags.baseUrl === undefined ? {} : { baseUrl: flags.baseUrl }),
        ...(flags.trustedProxy === undefined ? {} : { trustedProxies: flags.trustedProxy }),
        ...limits,
      });
    } catch (error) {
      throw listenFailure(error, flags.host, port);
    }
    try {
      await firstStart(service, flags, credits, io, logger);
      await service.start();
    } catch (error) {
      // A refused --owner-email, a store away: the server stops before anyone could use it.
      await server.close();
      throw error;
    }
    // Ctrl-C and SIGTERM alike, and caught before "Listening" is said: until Node has a
    // listener, a SIGTERM sent by whoever waits for that line would kill us, not stop us.
    const stopped = new Promise<void>((resolve) => {
      const stop = io.onInterrupt(() => resolve());
      server.server.once('close', () => {
        stop();
        resolve();
      });
    });
    logger.info(
      {
        event: 'start',
        url: server.url,
        store: storeName(flags),
        base_url: flags.baseUrl ?? listeningBaseUrl(flags.host, server.port),
        batch_work:
          shared === undefined ? 'here' : flags.work === true ? 'here and workers' : 'workers',
      },
      `Listening on ${server.url} (Ctrl-C to stop).`,
    );
    await stopped;
    logger.info(
      { event: 'stop' },
      'Stopping: finishing requests in flight; running batch jobs resume on the next start.',
    );
    await server.close();
    return EXIT.ok;
  } finally {
    await service.stop();
    await service.store.close();
    await shared?.close();
  }
}

/** The limits and timeouts of the server's connections and bodies that flags set. */
type ServerLimits = Pick<
  ServeOptions,
  | 'maxBodyBytes'
  | 'maxJsonDepth'
  | 'maxJsonElements'
  | 'maxHeadersCount'
  | 'maxHeaderBytes'
  | 'headersTimeoutMs'
  | 'requestTimeoutMs'
  | 'keepAliveTimeoutMs'
  | 'writeTimeoutMs'
>;

/** The ServeOptions of the limit flags, each checked (a usage error names the flag). */
function serverLimitsOf(flags: ServeFlags): ServerLimits {
  const whole = (value: string | undefined, flag: string, min: number) =>
    integer(value, flag, min, Number.MAX_SAFE_INTEGER);
  // A timer longer than 2^31 - 1 ms fires at once in Node: the longest timeout it keeps.
  const ms = (value: string | undefined, flag: string) => integer(value, flag, 1, 2 ** 31 - 1);
  const limits: ServerLimits = {
    ...optional('maxBodyBytes', whole(flags.maxBodyBytes, '--max-body-bytes', 1)),
    ...optional('maxJsonDepth', whole(flags.maxJsonDepth, '--max-json-depth', 1)),
    ...optional('maxJsonElements', whole(flags.maxJsonElements, '--max-json-elements', 1)),
    ...optional('maxHeadersCount', whole(flags.maxHeaders, '--max-headers', 1)),
    ...optional('maxHeaderBytes', whole(flags.maxHeaderBytes, '--max-header-bytes', 1024)),
    ...optional('headersTimeoutMs', ms(flags.headersTimeout, '--headers-timeout')),
    ...optional('requestTimeoutMs', ms(flags.requestTimeout, '--request-timeout')),
    ...optional('keepAliveTimeoutMs', ms(flags.keepAliveTimeout, '--keep-alive-timeout')),
    ...optional('writeTimeoutMs', ms(flags.writeTimeout, '--write-timeout')),
  };
  const headers = limits.headersTimeoutMs ?? HEADERS_TIMEOUT_MS;
  const request = limits.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  if (request < headers) {
    throw new UsageError(
      `--request-timeout (${request} ms) must be at least --headers-timeout (${headers} ms): the whole request includes its headers`,
    );
  }
  return limits;
}

/** The first start on an empty store: an account, and its key printed once on stdout. */
async function firstStart(
  service: Service,
  flags: ServeFlags,
  credits: number,
  io: CliIo,
  logger: Logger,
): Promise<void> {
  if ((await service.admin.listAccounts()).length > 0) return;
  const account = await service.admin.createAccount({
    email: flags.ownerEmail,
    plan: FIRST_PLAN,
    credits,
  });
  const { secret } = await service.admin.createKey(account.id, { name: 'first key' });
  logger.info(
    {
      event: 'account.created',
      account_id: account.id,
      plan: FIRST_PLAN,
      credits,
      store: storeName(flags),
    },
    `Created account ${account.id} (${account.email}, ${FIRST_PLAN} plan, ${credits} credits); its private API key is on stdout, shown this once (keep it; \`mailverdict keys\` makes more).`,
  );
  // Flushed before "Listening" goes to stderr: whoever reads both sees the key first.
  await new Promise<void>((resolve) => io.stdout.write(`${secret}\n`, () => resolve()));
}

/** An address that stands for every address of the machine: 0.0.0.0, ::. */
function isWildcard(host: string): boolean {
  return ipaddr.isValid(host) && ipaddr.parse(host).range() === 'unspecified';
}

/** download_url is built on it: an absolute http(s) URL, or a usage error now. */
export function checkBaseUrl(url: string): void {
  let protocol: string | undefined;
  try {
    protocol = new URL(url).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new UsageError(
      `--base-url must be an absolute http:// or https:// URL, got ${JSON.stringify(url)}`,
    );
  }
}

/** Why the server could not listen, in one line: a usage error, since a flag fixes it. */
export function listenFailure(error: unknown, host: string, port: number): Error {
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const reasons: Record<string, string> = {
    EADDRINUSE: 'the port is in use (--port 0 picks a free one)',
    EACCES: 'permission denied (ports below 1024 need privileges)',
    EADDRNOTAVAIL: 'the address is not one of this machine’s (--host)',
    ENOTFOUND: 'no such host (--host)',
    EAI_AGAIN: 'the host name could not be resolved (--host)',
  };
  const reason = reasons[(error as NodeJS.ErrnoException).code ?? ''];
  return reason === undefined
    ? (error as Error)
    : new UsageError(`cannot listen on ${where}: ${reason}`);
}
