import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CliIo } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { startDnsServer, type TestDnsServer } from './dns-server.js';

/** The repository, where the CLI runs from source. */
export const CLI_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Node's arguments that run the CLI from source (append the CLI's own). */
export const CLI_NODE_ARGS = ['--import', 'tsx', join(CLI_ROOT, 'src/cli/bin.ts')];

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  stdin?: string | Buffer;
  /** Called with all of stdout so far on each chunk: where a test sends its signal. */
  whenOutput?: (stdout: string, child: ReturnType<typeof spawn>) => void;
  /** Set over the test's own environment. */
  env?: Record<string, string>;
}

/** The CLI as a user runs it: a separate process, real pipes, real signals. */
export function runCli(args: string[], options: CliOptions = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI_NODE_ARGS, ...args], {
      cwd: CLI_ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.env === undefined ? {} : { env: { ...process.env, ...options.env } }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      options.whenOutput?.(stdout, child);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    // A run that exits before reading its input (a usage error) must not fail the test.
    child.stdin.on('error', () => {});
    child.stdin.end(options.stdin ?? '');
  });
}

/** A CLI process that runs until it is stopped (serve, worker). */
export interface CliProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** stdout and stderr so far, as they arrived. */
  output(): string;
  /** Resolves with the first match of `pattern` in stdout + stderr. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends `signal` (SIGTERM by default) and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts a long-running CLI command (serve, worker) as a user would, in its own process. */
export function startCli(args: readonly string[]): CliProcess {
  return startProcess(process.execPath, [...CLI_NODE_ARGS, ...args]);
}

/**
 * Starts a long-running program (a CLI command, a shell line, redis-server) in its own process,
 * from the repository unless `cwd` says where; `env` is set over the test's own environment.
 * With `group`, it leads a process group of its own and stop() signals the whole group, as a
 * terminal's Ctrl-C does: a program that runs the real one as its child (npx, a shell) passes
 * no signal on.
 */
export function startProcess(
  file: string,
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string>; group?: boolean } = {},
): CliProcess {
  const child = spawn(file, args, {
    cwd: options.cwd ?? CLI_ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
    detached: options.group === true,
  });
  let output = '';
  const listeners = new Set<() => void>();
  const append = (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout.on('data', append);
  child.stderr.on('data', append);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    child,
    output: () => output,
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = output.match(pattern);
          if (match === null) return;
          done();
          resolve(match);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no ${pattern} within ${timeoutMs} ms; output:\n${output}`));
        }, timeoutMs);
        const onExit = () => {
          done();
          reject(new Error(`exited before ${pattern}; output:\n${output}`));
        };
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        listeners.add(check);
        child.once('exit', onExit);
        check();
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) {
        if (options.group === true) process.kill(-(child.pid as number), signal);
        else child.kill(signal);
      }
      const code = await exited;
      // The group's other processes (what npx or a shell ran) must end too, not linger.
      if (options.group === true) await groupGone(child.pid as number);
      return code;
    },
  };
}

/**
 * A loopback DNS server that answers MX for fast0.com to fast99.com and never answers any
 * other name: verifications of those wait until the run is interrupted.
 */
export function startFastAndSilentDns(): Promise<TestDnsServer> {
  const zone: Parameters<typeof startDnsServer>[0] = {};
  for (let d = 0; d < 100; d++) {
    zone[`fast${d}.com`] = { mx: [{ exchange: `mx.fast${d}.com`, preference: 10 }] };
  }
  return startDnsServer(zone, { silent: true });
}

/** 100 addresses startFastAndSilentDns answers for, then 400 it never does. */
export function fastThenSilentAddresses(): string[] {
  return [
    ...Array.from({ length: 100 }, (_, i) => `user${i}@fast${i}.com`),
    ...Array.from({ length: 400 }, (_, i) => `user${i}@silent${i}.com`),
  ];
}

/** The `batch` arguments that read stdin against `dns` with a deadline no test reaches. */
export function batchAgainst(dns: TestDnsServer): string[] {
  return [
    'batch',
    '-',
    '--method',
    'quick',
    '--dns-server',
    dns.address,
    '--dns-timeout',
    '60000',
    '--no-dns-canary',
  ];
}

/**
 * Sends `signal` to the run once it has written more than `lines` lines (`sent()` says whether
 * it did): a stop in mid-run, after those results.
 */
export function signalAfter(lines: number, signal: NodeJS.Signals) {
  let sent = false;
  return {
    sent: () => sent,
    whenOutput: (stdout: string, child: ReturnType<typeof spawn>) => {
      if (!sent && stdout.split('\n').length > lines) {
        sent = true;
        child.kill(signal);
      }
    },
  };
}

/** A `mailverdict serve` child on a free port, the key its first start printed, and its stop. */
export interface ServeChild {
  readonly url: string;
  readonly key: string;
  stop(): Promise<number | null>;
}

/**
 * Starts `mailverdict serve --db <db> --port 0 --offline` plus `args` on a new file, and waits
 * for the key (stdout) and the "Listening on" line (stderr); `stop()` sends SIGTERM.
 */
export async function startServe(db: string, args: readonly string[] = []): Promise<ServeChild> {
  const child = spawn(
    process.execPath,
    [...CLI_NODE_ARGS, 'serve', '--db', db, '--port', '0', '--offline', ...args],
    { cwd: CLI_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const ready = new Promise<{ url: string; key: string }>((resolve, reject) => {
    const check = () => {
      const url = /Listening on (http:\/\/\S+) /.exec(stderr)?.[1];
      if (url !== undefined && stdout.includes('\n')) resolve({ url, key: stdout.trim() });
    };
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      check();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      check();
    });
    void exited.then(() => reject(new Error(`serve exited: ${stderr}`)));
  });
  const { url, key } = await ready;
  return {
    url,
    key,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/**
 * The CLI with its standard output redirected to `file`, as `> file` does (so the run can name
 * it), sending `signal` once the file holds more than `lines` lines: a stop in mid-run.
 */
export function runCliToFile(
  args: string[],
  file: string,
  options: { stdin: string; lines: number; signal: NodeJS.Signals },
): Promise<Omit<CliRun, 'stdout'> & { sent: boolean }> {
  return new Promise((resolve, reject) => {
    const out = openSync(file, 'w');
    const child = spawn(process.execPath, [...CLI_NODE_ARGS, ...args], {
      cwd: CLI_ROOT,
      stdio: ['pipe', out, 'pipe'],
    });
    closeSync(out);
    let stderr = '';
    let sent = false;
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const watch = setInterval(() => {
      if (sent) return;
      const written = readFileSync(file, 'utf8').split('\n').length - 1;
      if (written > options.lines) {
        sent = true;
        child.kill(options.signal);
      }
    }, 20);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearInterval(watch);
      resolve({ code, signal, stderr, sent });
    });
    child.stdin?.on('error', () => {});
    child.stdin?.end(options.stdin);
  });
}

/**
 * A bash script run from the repository (or `cwd`); `env` is set over the test's own
 * environment.
 */
export function runShell(
  script: string,
  options: { stdin?: string; env?: Record<string, string>; cwd?: string } = {},
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], {
      cwd: options.cwd ?? CLI_ROOT,
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    child.stdin?.on('error', () => {});
    if (options.stdin !== undefined) child.stdin?.end(options.stdin);
  });
}

/** The CLI run from source, as one shell word list (quoted): `$MV batch ...` in a script. */
const CLI_COMMAND = [process.execPath, ...CLI_NODE_ARGS].map((word) => `'${word}'`).join(' ');

/**
 * A command line as a user types it into bash, where `mailverdict` runs the CLI from source:
 * what the CLI prints for the user to run (the `--resume` command) is run as printed.
 */
export function runTyped(command: string, stdin = ''): Promise<CliRun> {
  return runShell(`mailverdict() { ${CLI_COMMAND} "$@"; }\n${command}`, { stdin });
}

/**
 * A shell pipeline where `$MV` runs the CLI, for what only a real pipe shows. `$MV` is
 * expanded unquoted, split at spaces: the paths it holds have none.
 */
export function runPipeline(script: string): Promise<CliRun> {
  const mv = [process.execPath, ...CLI_NODE_ARGS].join(' ');
  return runShell(`set -o pipefail; ${script}`, { env: { MV: mv } });
}

/**
 * A loopback DNS server that answers MX for slow0.com to slow{domains - 1}.com, each
 * answer `delayMs` late: a resolver far away, so that a run of a few thousand addresses lasts
 * long enough to be stopped in its middle.
 */
export function startSlowDns(domains: number, delayMs: number): Promise<TestDnsServer> {
  const zone: Parameters<typeof startDnsServer>[0] = {};
  for (let d = 0; d < domains; d++) {
    zone[`slow${d}.com`] = { mx: [{ exchange: `mx.slow${d}.com`, preference: 10 }] };
  }
  return startDnsServer(zone, { rcode: 'NXDOMAIN' }, delayMs);
}

/** The CLI in this process, with captured streams: its exit code, stdout's lines and stderr. */
export async function runInProcess(args: string[], stdin: string | Buffer = '') {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const io: CliIo = {
    stdout,
    stderr,
    stdin: Readable.from([typeof stdin === 'string' ? Buffer.from(stdin) : stdin]),
    onInterrupt: () => () => {},
  };
  const code = await main(args, io);
  return { code, out: out.split('\n').filter(Boolean), err };
}

/** Waits until no process of the group `pgid` is left; rejects after `timeoutMs`. */
async function groupGone(pgid: number, timeoutMs = 30_000): Promise<void> {
  for (const started = Date.now(); Date.now() - started < timeoutMs;) {
    try {
      process.kill(-pgid, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`process group ${pgid} still runs ${timeoutMs} ms after its stop`);
}
