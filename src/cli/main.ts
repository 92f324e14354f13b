import { readFileSync } from 'node:fs';
import { Argument, Command, CommanderError, Option } from 'commander';
import { METHOD_NAMES } from '../engine/methods.js';
import { MAX_BODY_BYTES, MAX_JSON_DEPTH, MAX_JSON_ELEMENTS } from '../http/request-body.js';
import {
  HEADERS_TIMEOUT_MS,
  KEEP_ALIVE_TIMEOUT_MS,
  WRITE_TIMEOUT_MS,
  MAX_HEADER_BYTES,
  MAX_HEADERS_COUNT,
  REQUEST_TIMEOUT_MS,
} from '../http/server-limits.js';
import {
  creditsBalance,
  creditsGrant,
  creditsLedger,
  filtersAdd,
  filtersList,
  filtersRemove,
  keysCreate,
  keysList,
  keysRevoke,
  keysRotate,
  type FilterAddFlags,
  type FilterListFlags,
  type GrantFlags,
  type KeyCreateFlags,
  type KeyRotateFlags,
  type LedgerFlags,
} from './commands/admin.js';
import {
  accountsCreate,
  accountsList,
  accountsPlan,
  type AccountCreateFlags,
} from './commands/accounts.js';
import { batchCommand, type BatchFlags } from './commands/batch.js';
import { serveCommand, type ServeFlags } from './commands/serve.js';
import { verifyCommand, type VerifyFlags } from './commands/verify.js';
import {
  webhooksList,
  webhooksRedeliver,
  webhooksRotate,
  webhooksSecret,
  type WebhookListFlags,
} from './commands/webhooks.js';
import { workerCommand, type WorkerFlags } from './commands/worker.js';
import { EXIT, UsageError, type ExitCode } from './exit-codes.js';
import { processIo, type CliIo } from './io.js';
import { CLI_LOG_LEVELS, DEFAULT_LOG_LEVEL } from './logger.js';
import { remoteFailure } from './remote.js';
import { DEFAULT_DB, serviceFailure, type FileFlags } from './service-file.js';
import { escapeForTerminal } from './terminal.js';
import { ServiceError } from '../service/service-error.js';
import { SLICE_MS } from '../slices.js';
import { PLAN_NAMES, type PlanName } from '../service/plans.js';

/** Our package.json: two folders up from src/cli/main.ts and from dist/cli/bin.js alike. */
function version(): string {
  const manifest = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(manifest) as { version: string }).version;
}

/** How the engine reaches the world: DNS and SMTP settings, or none at all. */
function withConnectionFlags(command: Command): Command {
  return command
    .option('--offline', 'no DNS at all: syntax, TLD and lists only')
    .option(
      '--dns-server <ip[:port]>',
      "name server to ask (repeatable; default: the system's)",
      collect,
    )
    .option('--dns-timeout <ms>', 'deadline of one DNS lookup')
    .option('--no-dns-canary', 'trust the resolver without checking it first (see README: DNS)')
    .option('--helo <name>', 'smtp: the name to greet with (EHLO)')
    .option('--mail-from <address>', 'smtp: the envelope sender of probes')
    .option('--smtp-port <port>', 'smtp: port of the mail hosts (default: 25)')
    .option('--smtp-timeout <ms>', 'smtp: wait for each reply')
    .option(
      '--smtp-proxy <url>',
      'smtp: probe through this SOCKS5 proxy, socks5://[user:pass@]host:port (repeatable)',
      collect,
    )
    .option(
      '--allow-private-networks',
      'tests and intranets only: probe MX hosts (and send webhooks) on loopback and private addresses',
    );
}

/** The flags of every command that verifies: method, DNS, SMTP, concurrency, or a server. */
function withEngineFlags(command: Command): Command {
  return withConnectionFlags(
    command.addOption(
      new Option('-m, --method <method>', 'checks to run')
        .choices(METHOD_NAMES)
        .default('standard'),
    ),
  )
    .option('--concurrency <domains>', 'domains verified at once (default: 50)')
    .addOption(
      new Option('--server <url>', 'verify through a running mailverdict API, not here').env(
        'MAILVERDICT_SERVER',
      ),
    )
    .addOption(
      new Option(
        '--api-key <key>',
        'with --server: its API key (MAILVERDICT_API_KEY keeps it out of ps)',
      ).env('MAILVERDICT_API_KEY'),
    );
}

/** The flags, told whether the API key was typed (it then needs a server) or came from the environment. */
function withKeySource<F extends object>(flags: F, command: Command): F & { apiKeyFlag: boolean } {
  return { ...flags, apiKeyFlag: command.getOptionValueSource('apiKey') === 'cli' };
}

/** The flags of `serve`: where to listen, how the first account starts, and the engine's. */
function withServeFlags(command: Command): Command {
  return withConnectionFlags(
    command
      .option('--port <port>', 'port to listen on (0 picks a free one)', '8080')
      .option(
        '--host <address>',
        'address to listen on (0.0.0.0 exposes it: a choice)',
        '127.0.0.1',
      )
      .option(
        '--base-url <url>',
        'public URL of the API, kept with each batch job for its download_url (default: the address listened on)',
      )
      .option(
        '--trusted-proxy <cidr>',
        'a reverse proxy whose X-Forwarded-For is believed (repeatable)',
        collect,
      )
      .option('--owner-email <address>', "first start: the account's email", 'owner@example.com')
      .option('--credits <n>', 'first start: credits the account gets', '1000')
      .option('--no-metrics', 'no GET /metrics (Prometheus text; on by default)')
      .option('--work', 'with --redis: verify batch chunks here too, not only in workers')
      .option('--chunk-size <n>', 'with --redis: addresses per queued chunk (default: 500)')
      .option(
        '--max-body-bytes <n>',
        `largest POST body, else 413 (default: ${MAX_BODY_BYTES}, 16 MiB)`,
      )
      .option('--max-json-depth <n>', `deepest a JSON body nests (default: ${MAX_JSON_DEPTH})`)
      .option(
        '--max-json-elements <n>',
        `most elements a JSON body holds (default: ${MAX_JSON_ELEMENTS})`,
      )
      .option('--max-headers <n>', `most header fields, else 431 (default: ${MAX_HEADERS_COUNT})`)
      .option(
        '--max-header-bytes <n>',
        `largest request line and headers, else 431 (default: ${MAX_HEADER_BYTES})`,
      )
      .option(
        '--headers-timeout <ms>',
        `time to send the request line and headers, else 408 (default: ${HEADERS_TIMEOUT_MS})`,
      )
      .option(
        '--request-timeout <ms>',
        `time to send a whole request, body included, else 408 (default: ${REQUEST_TIMEOUT_MS})`,
      )
      .option(
        '--keep-alive-timeout <ms>',
        `how long an idle connection stays open (default: ${KEEP_ALIVE_TIMEOUT_MS})`,
      )
      .option(
        '--write-timeout <ms>',
        `how long a client may take nothing of an answer before it is cut (default: ${WRITE_TIMEOUT_MS})`,
      )
      .option(
        '--slice-ms <ms>',
        `how long batch work holds the server at a time before answering requests (default: ${SLICE_MS})`,
      )
      .option('--access-log', 'log one line per request (method, route, status, duration, key id)'),
  );
}

/** `--log-level`: the JSON lines serve and worker write on stderr. */
function withLogFlags(command: Command): Command {
  return command.addOption(
    new Option('--log-level <level>', 'JSON log lines on stderr from this level up')
      .choices(CLI_LOG_LEVELS)
      .default(DEFAULT_LOG_LEVEL),
  );
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * Runs the CLI with its arguments; resolves to the exit code (README: "Exit codes"). Every
 * mistake in the call or the input is one line on stderr and exit 2, never a stack trace.
 */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  let exitCode: ExitCode = EXIT.ok;
  const program = new Command('mailverdict')
    .description('Verify email addresses: syntax, domain, MX, disposable, role, SMTP.')
    .version(version(), '-V, --version')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      // One line, like every other refusal (ripgrep's style): commander's "error: ..." and its
      // "(Did you mean ...?)" joined, and the option or command echoed back escaped.
      outputError: (text, write) => write(`${usageLine(text)}\n`),
    })
    // Our own `help [command...]`: commander's reads one name only, and shows the whole
    // program's help, on stderr with exit 2 and no word of why, for a name it does not know.
    .helpCommand(false);

  withEngineFlags(
    program
      .command('verify')
      .description('verify the addresses given as arguments')
      .argument('<address...>', 'addresses to verify')
      .option('--json', 'one JSON object per line (input, verdict, risk factors, error)')
      .option('--strict', 'exit 1 if any address is undeliverable, 3 if any is risky'),
  ).action(async (addresses: string[], flags: VerifyFlags, command: Command) => {
    exitCode = await verifyCommand(addresses, withKeySource(flags, command), io);
  });

  withEngineFlags(
    program
      .command('batch')
      .description('verify a list, one address a line or a CSV column, from a file or - (stdin)')
      .argument('<file>', 'the list, or - for standard input')
      .addOption(
        new Option('-o, --output <format>', 'records as')
          .choices(['ndjson', 'csv'])
          .default('ndjson'),
      )
      .option('--csv', 'read the input as CSV (default for *.csv files and with --column)')
      .option(
        '--column <name>',
        'CSV: the column holding addresses (default: the one headed email, e-mail or email address; else the only one)',
      )
      .option('--no-progress', 'no progress bar, even on a terminal')
      .option(
        '--resume <output>',
        "an earlier run's output file: verify only the addresses it has no record of, and append their records to it",
      ),
  ).action(async (file: string, flags: BatchFlags, command: Command) => {
    exitCode = await batchCommand(file, withKeySource(flags, command), io, argv);
  });

  const run =
    <A extends unknown[]>(command: (...args: A) => Promise<ExitCode>) =>
    async (...args: A) => {
      exitCode = await command(...args);
    };
  const onStore = (command: Command) =>
    command
      .option('--db <path>', 'the SQLite file of the service', DEFAULT_DB)
      .option('--redis <url>', 'the Redis of the service instead of a file (running at scale)');
  const onFile = (command: Command) =>
    onStore(command).option('--account <id>', "the account (default: the file's only one)");

  onFile(
    withLogFlags(
      withServeFlags(
        program
          .command('serve')
          .description(
            'serve the /v1 HTTP API on a SQLite file (or --redis); the first start creates an account and prints its key once',
          ),
      ),
    ),
  ).action(run((flags: ServeFlags) => serveCommand(flags, io)));

  withLogFlags(
    withConnectionFlags(
      program
        .command('worker')
        .description('verify batch chunks from the queue of a Redis shared with `serve --redis`')
        .option('--redis <url>', 'the Redis the API processes use (required)')
        .option(
          '--base-url <url>',
          "jobs stored by older versions only: the API's public URL (a job keeps its server's)",
        )
        .option('--jobs <n>', 'chunks verified at once (default: 2)')
        .option('--concurrency <domains>', 'domains verified at once per chunk (default: 50)')
        .option('--smtp-per-host <n>', 'SMTP sessions to one mail host at once, across all workers')
        .option('--chunk-size <n>', 'addresses per chunk of jobs this worker queues (default: 500)')
        .option(
          '--lock-ms <ms>',
          "a dead worker's chunk goes to another after this (default: 30000)",
        )
        .option('--port <port>', 'serve GET /health, /ready and /metrics on this port (no API)')
        .option('--host <address>', 'address of --port', '127.0.0.1')
        .option('--no-metrics', 'with --port: no GET /metrics'),
    ),
  ).action(run((flags: WorkerFlags) => workerCommand(flags, io)));

  const keys = program.command('keys').description('API keys of the account');
  onFile(keys.command('create').description('make a key; its secret is printed once'))
    .option(
      '--public',
      'a public key (browsers), limited to verify and 10 requests a day per visitor',
    )
    .option('--name <name>', 'a name to tell it by')
    .option(
      '--allowed-ip <cidr>',
      'private keys: an address or range it may be used from (repeatable)',
      collect,
    )
    .option(
      '--trusted-domain <host>',
      'public keys: a page host that may use it over https, *.example.com for subdomains, http://host for http pages too (repeatable)',
      collect,
    )
    .action(run((flags: KeyCreateFlags) => keysCreate(flags, io)));
  onFile(keys.command('list').description('list keys (never their secrets)'))
    .option('--json', 'one JSON object per line')
    .action(run((flags: FileFlags & { json?: boolean }) => keysList(flags, io)));
  onFile(keys.command('revoke').description('stop a key at once').argument('<key-id>')).action(
    run((id: string, flags: FileFlags) => keysRevoke(id, flags, io)),
  );
  onFile(
    keys
      .command('rotate')
      .description('replace a key; the old one works --grace seconds more')
      .argument('<key-id>'),
  )
    .option('--grace <seconds>', 'how long the old key keeps working (default: 0)')
    .action(run((id: string, flags: KeyRotateFlags) => keysRotate(id, flags, io)));

  const credits = program.command('credits').description('the credits ledger');
  onFile(credits.command('grant').description('add credits to the account').argument('<amount>'))
    .option('--note <text>', 'why, for the ledger')
    .action(run((amount: string, flags: GrantFlags) => creditsGrant(amount, flags, io)));
  onFile(credits.command('balance').description('available, reserved, used and total credits'))
    .option('--json', 'one JSON object')
    .action(run((flags: FileFlags & { json?: boolean }) => creditsBalance(flags, io)));
  onFile(credits.command('ledger').description('ledger entries in the order they were filed'))
    .option('--limit <n>', 'entries at most (default 100, at most 10000)')
    .option('--after <seq>', 'the entries after this one (the next page)')
    .option('--json', 'one JSON object per line')
    .action(run((flags: LedgerFlags) => creditsLedger(flags, io)));

  const accounts = program.command('accounts').description('the accounts of the service');
  onStore(accounts.command('create').description('make an account; its id is printed'))
    .requiredOption('--email <address>', "the account's email")
    .addOption(new Option('--plan <plan>', 'its plan').choices(PLAN_NAMES).default('free'))
    .option('--credits <n>', 'credits it starts with (default: 0)')
    .action(run((flags: AccountCreateFlags) => accountsCreate(flags, io)));
  onStore(accounts.command('list').description('every account with its plan and balance'))
    .option('--json', 'one JSON object per line')
    .action(run((flags: FileFlags & { json?: boolean }) => accountsList(flags, io)));
  onFile(
    accounts
      .command('plan')
      .description("change the account's plan (its keys' rate limits)")
      .addArgument(new Argument('<plan>', 'the new plan').choices(PLAN_NAMES)),
  ).action(run((plan: PlanName, flags: FileFlags) => accountsPlan(plan, flags, io)));

  const webhooks = program
    .command('webhooks')
    .description("batch completion webhooks: deliveries and the account's signing secret");
  onFile(webhooks.command('list').description('deliveries, newest first, and where each stands'))
    .option('--failed', 'only those given up')
    .option('--limit <n>', 'deliveries at most (default 100, at most 1000)')
    .option('--json', 'one JSON object per line')
    .action(run((flags: WebhookListFlags) => webhooksList(flags, io)));
  onFile(
    webhooks
      .command('redeliver')
      .description("queue a finished job's webhook again; a running serve or worker sends it")
      .argument('<job-id>'),
  ).action(run((job: string, flags: FileFlags) => webhooksRedeliver(job, flags, io)));
  onFile(
    webhooks
      .command('secret')
      .description("print the account's whsec_ secret, which receivers verify deliveries with"),
  ).action(run((flags: FileFlags) => webhooksSecret(flags, io)));
  onFile(webhooks.command('rotate').description('replace the secret and print the new one')).action(
    run((flags: FileFlags) => webhooksRotate(flags, io)),
  );

  const filters = program.command('filters').description('block and allow filters');
  onFile(
    filters
      .command('add')
      .description('block or allow an email, a domain or an IP range')
      .argument('<value>'),
  )
    .addOption(
      new Option('--type <type>', 'what the value is')
        .choices(['email', 'domain', 'ip_address'])
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--action <action>', 'what a match does')
        .choices(['block', 'allow'])
        .makeOptionMandatory(),
    )
    .option('--reason <text>', 'why, shown with the filter')
    .action(run((value: string, flags: FilterAddFlags) => filtersAdd(value, flags, io)));
  onFile(filters.command('list').description('list filters, a page at a time'))
    .addOption(
      new Option('--type <type>', 'only this type').choices(['email', 'domain', 'ip_address']),
    )
    .option('--page <n>', 'page number (default 1)')
    .option('--per-page <n>', 'filters a page (default 25, at most 100)')
    .option('--json', 'the page as one JSON object')
    .action(run((flags: FilterListFlags) => filtersList(flags, io)));
  onFile(filters.command('rm').description('delete a filter').argument('<filter-id>')).action(
    run((id: string, flags: FileFlags) => filtersRemove(id, flags, io)),
  );

  program
    .command('help')
    .description('display help for command')
    .argument('[command...]', 'a command, or a command and its subcommand (keys create)')
    .action((names: string[]) => {
      let command: Command = program;
      for (const name of names) {
        const next = command.commands.find((c) => c.name() === name || c.aliases().includes(name));
        if (next === undefined) {
          throw new UsageError(
            `unknown command '${names.join(' ')}' (mailverdict --help lists them)`,
          );
        }
        command = next;
      }
      command.outputHelp();
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end this way too, with exit code 0.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    // Messages quote the input (a CSV header, a filter value): escaped, as addresses are.
    const usage = error instanceof UsageError ? error : serviceFailure(error);
    if (usage !== undefined) {
      io.stderr.write(`mailverdict: ${escapeForTerminal(usage.message)}\n`);
      return EXIT.usage;
    }
    const remote = remoteFailure(error);
    if (remote !== undefined) {
      io.stderr.write(`mailverdict: ${escapeForTerminal(remote.message)}\n`);
      return remote.usage ? EXIT.usage : EXIT.failure;
    }
    io.stderr.write(`mailverdict: ${escapeForTerminal(failureText(error))}\n`);
    return EXIT.failure;
  }
}

/**
 * A failure in one line for the operator at the terminal: the service's words for clients,
 * and the store's own after them (an API client is never shown those; the operator is).
 */
function failureText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const cause = error instanceof ServiceError ? error.cause : undefined;
  return cause instanceof Error ? `${text} (${cause.message})` : text;
}

/** Commander's error text as our one line: `mailverdict: unknown option '--jsn' (did you mean --json?; ...)`. */
function usageLine(text: string): string {
  const [first = '', ...rest] = text.trim().split('\n');
  const hints = [
    ...rest.map((hint) => hint.replace(/^\((.*)\)$/, '$1').replace(/^Did/, 'did')),
    // `-foo@x.org` is a valid address, which commander takes for an option (ripgrep's tip).
    ...(/^error: unknown option '-[^']*@/.test(first)
      ? ['to verify an address that starts with -, put -- before it']
      : []),
    // curl's -o is a file; ours is the format (kubectl's): say how to get a file.
    ...(/^error: option '-o, --output <format>' argument '[^']*' is invalid/.test(first)
      ? ['-o is the format: to write a file, redirect the output (> list.ndjson)']
      : []),
    'mailverdict --help for usage',
  ];
  return `mailverdict: ${escapeForTerminal(first.replace(/^error: /, ''))} (${escapeForTerminal(hints.join('; '))})`;
}
