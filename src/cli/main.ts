import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { METHOD_NAMES } from '../engine/methods.js';
import { batchCommand, type BatchFlags } from './commands/batch.js';
import { verifyCommand, type VerifyFlags } from './commands/verify.js';
import { EXIT, UsageError, type ExitCode } from './exit-codes.js';
import { processIo, type CliIo } from './io.js';

/** Our package.json: two folders up from src/cli/main.ts and from dist/cli/bin.js alike. */
function version(): string {
  const manifest = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(manifest) as { version: string }).version;
}

/** The flags of every command that verifies: method, DNS, SMTP, concurrency. */
function withEngineFlags(command: Command): Command {
  return command
    .addOption(
      new Option('-m, --method <method>', 'checks to run')
        .choices(METHOD_NAMES)
        .default('standard'),
    )
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
    .option('--concurrency <domains>', 'domains verified at once (default: 50)');
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
    })
    .showHelpAfterError('(mailverdict --help for usage)');

  withEngineFlags(
    program
      .command('verify')
      .description('verify the addresses given as arguments')
      .argument('<address...>', 'addresses to verify')
      .option('--json', 'one JSON object per line (input, verdict, risk factors, error)')
      .option('--strict', 'exit 1 if any address is undeliverable, 3 if any is risky'),
  ).action(async (addresses: string[], flags: VerifyFlags) => {
    exitCode = await verifyCommand(addresses, flags, io);
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
      .option('--csv', 'read the input as CSV (default for *.csv files)')
      .option(
        '--column <name>',
        'CSV: the column holding addresses (default: email, else the first)',
      )
      .option('--no-progress', 'no progress bar, even on a terminal'),
  ).action(async (file: string, flags: BatchFlags) => {
    exitCode = await batchCommand(file, flags, io);
  });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end this way too, with exit code 0.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (error instanceof UsageError) {
      io.stderr.write(`mailverdict: ${error.message}\n`);
      return EXIT.usage;
    }
    io.stderr.write(`mailverdict: ${(error as Error).message}\n`);
    return EXIT.failure;
  }
}
