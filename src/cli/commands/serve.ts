import { EXIT, UsageError, type ExitCode } from '../exit-codes.js';
import { engineOptionsOf, type EngineFlags } from '../engine-options.js';
import { line, type CliIo } from '../io.js';
import { openService, type FileFlags } from '../service-file.js';

export interface ServeFlags extends FileFlags, Omit<EngineFlags, 'method'> {
  readonly port: string;
  readonly host: string;
  readonly baseUrl?: string;
  readonly trustedProxy?: string[];
  readonly ownerEmail: string;
  readonly credits: string;
  /** `--no-metrics` turns GET /metrics off. */
  readonly metrics?: boolean;
}

/** First start: an account with credits on the enterprise plan (it is your own server). */
const FIRST_PLAN = 'enterprise';

/**
 * `mailverdict serve`: the /v1 API on a SQLite file. The first start creates an account and
 * prints its private key once (stdout); every start resumes interrupted batch jobs. Ctrl-C or
 * SIGTERM finishes the requests in flight and leaves running jobs to resume next time.
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
  const service = await openService(flags.db, {
    ...engineOptionsOf({ ...flags, method: 'standard' }),
    ...(metrics === undefined ? {} : { observer: metrics.observer }),
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
        `Created account ${account.id} (${account.email}, ${FIRST_PLAN} plan, ${credits} credits) in ${flags.db}.`,
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
  }
}
