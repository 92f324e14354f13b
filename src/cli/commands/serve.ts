import { EXIT, UsageError, type ExitCode } from '../exit-codes.js';
import { optional } from '../../optional.js';
import {
  callbackOptionsOf,
  engineOptionsOf,
  integer,
  type EngineFlags,
} from '../engine-options.js';
import { line, type CliIo } from '../io.js';
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
  const port = Number(flags.port);
  if (!(Number.isInteger(port) && port >= 0 && port < 65_536)) {
    throw new UsageError(`--port must be a port number, got ${JSON.stringify(flags.port)}`);
  }
  const credits = Number(flags.credits);
  if (!(Number.isSafeInteger(credits) && credits >= 0)) {
    throw new UsageError(`--credits must be a whole number, got ${JSON.stringify(flags.credits)}`);
  }
  const { loadPrometheusMetrics, serve } = await import('../../http/node-server.js');
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
    ...(metrics === undefined ? {} : { observer: metrics.observer }),
    batch: { ...shared?.batch, ...callbackOptionsOf(flags) },
  });
  try {
    if ((await service.admin.listAccounts()).length === 0) {
      const account = await service.admin.createAccount({
        email: flags.ownerEmail,
        plan: FIRST_PLAN,
        credits,
      });
      const { secret } = await service.admin.createKey(account.id, { name: 'first key' });
      line(
        io.stderr,
        `Created account ${account.id} (${account.email}, ${FIRST_PLAN} plan, ${credits} credits) in ${storeName(flags)}.`,
      );
      line(
        io.stderr,
        'Its private API key, shown this once (keep it; `mailverdict keys` makes more):',
      );
      // Flushed before "Listening" goes to stderr: whoever reads both sees the key first.
      await new Promise<void>((resolve) => io.stdout.write(`${secret}\n`, () => resolve()));
    }
    const server = await serve(service, {
      port,
      hostname: flags.host,
      metrics: metrics ?? false,
      ...(flags.baseUrl === undefined ? {} : { baseUrl: flags.baseUrl }),
      ...(flags.trustedProxy === undefined ? {} : { trustedProxies: flags.trustedProxy }),
    });
    line(io.stderr, `Listening on ${server.url} (Ctrl-C to stop).`);
    await new Promise<void>((resolve) => {
      const stop = io.onInterrupt(resolve);
      process.once('SIGTERM', () => resolve());
      server.server.once('close', () => {
        stop();
        resolve();
      });
    });
    line(
      io.stderr,
      'Stopping: finishing requests in flight; running batch jobs resume on the next start.',
    );
    await server.close();
    return EXIT.ok;
  } finally {
    await service.store.close();
    await shared?.close();
  }
}
