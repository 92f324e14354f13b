import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';

/** Where scripts/fetch-test-mtas.sh unpacks Debian's MTA packages (`dpkg -x`). */
export const MTA_ROOT = process.env.MAILVERDICT_MTA_ROOT ?? '/tmp/mailverdict-mtas';
/** How to get them, for the notices of the tests that skip without them. */
export const FETCH_MTAS = 'run `sudo bash scripts/fetch-test-mtas.sh` (Debian)';

/**
 * What every real MTA under test (test/integration/mta-contract.ts) is configured to serve, so
 * that one set of addresses is asked of each. Nothing leaves the machine: the domains are the
 * servers' own, reached through a DNS the tests control.
 */
export const MAIL_WORLD = {
  /** The one mailbox that exists at example.org. */
  mailbox: 'ann@example.org',
  /** Any other local part at example.org: no such user. */
  unknownUser: 'bob@example.org',
  /** catch-all.org accepts every local part. */
  catchAllAddress: 'whoever@catch-all.org',
  /** elsewhere.org's MX points at the server, which does not serve it: a relay it refuses. */
  relayed: 'ann@elsewhere.org',
  /** The sender the tests probe with, at a domain none of the servers knows. */
  sender: 'verify@example.net',
  localDomains: ['example.org', 'catch-all.org'],
  catchAllDomain: 'catch-all.org',
  foreignDomain: 'elsewhere.org',
} as const;

/** A real MTA started on loopback for one test file, with both of its listeners. */
export interface TestMta {
  readonly name: string;
  /** Plain SMTP: no STARTTLS offered. */
  readonly port: number;
  /**
   * STARTTLS offered with a self-signed certificate, and required before MAIL FROM (merely
   * offered where no handshake can succeed: MtaQuirks.tlsHandshakeFails).
   */
  readonly tlsPort: number;
  /** A MAIL FROM this server refuses (at MAIL FROM or at RCPT, as the server does). */
  readonly refusedSender: string;
  /** The server's process group leader while it runs. */
  readonly pid: number;
  /** Its temporary directory (config, spool, logs, certificate), removed by close(). */
  readonly dir: string;
  /** What it wrote to its standard streams and log files so far, for failure messages. */
  log(): string;
  /** Stops every process of the server and removes its directory. */
  close(): Promise<void>;
}

/**
 * Where a server cannot behave as the contract expects of every MTA, for a reason of its own
 * (its design, its build), the contract asserts what the engine can still promise instead.
 */
export interface MtaQuirks {
  /**
   * It refuses a relay in the very words it gives an unknown user, so no reading of the reply
   * can tell the two apart: why (a source).
   */
  readonly relayRefusedAsUnknownUser?: string;
  /** Every STARTTLS handshake fails on its side; its log says so in words this matches. */
  readonly tlsHandshakeFails?: { readonly why: string; readonly logged: RegExp };
}

/**
 * Whether a server's tests can run here: prints one notice and skips when not, or throws when
 * CI requires the server (its MAILVERDICT_REQUIRE_* variable is 1).
 */
export function mtaAvailable(
  name: string,
  requireVariable: string,
  unavailable: string | undefined,
): boolean {
  if (unavailable === undefined) return true;
  if (process.env[requireVariable] === '1')
    throw new Error(`${name} cannot run here (${unavailable}), and ${requireVariable}=1`);
  console.warn(`[notice] ${name} tests skipped: ${unavailable}`);
  return false;
}

/** Why the openssl command (for the self-signed certificate) cannot run, or undefined. */
export function opensslUnavailable(): string | undefined {
  const probe = spawnSync('openssl', ['version'], { encoding: 'utf8' });
  return probe.status === 0 ? undefined : 'the openssl command is not installed';
}

/** What a server's launcher hands back, for startMta to make a TestMta of. */
export interface LaunchedMta {
  readonly daemon: Daemon;
  readonly refusedSender: string;
  /** The log it writes to files rather than to its standard streams, when it does. */
  readonly logFiles?: () => string;
}

/**
 * Starts one server in a fresh temporary directory, on two loopback ports the system picks: a
 * few tries, since a port can be taken between the asking and the binding.
 */
export async function startMta(
  name: string,
  launch: (dir: string, port: number, tlsPort: number) => Promise<LaunchedMta>,
): Promise<TestMta> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const dir = mkdtempSync(join(tmpdir(), `mailverdict-${name.toLowerCase()}-`));
    try {
      const port = await freePort();
      const tlsPort = await freePort();
      const { daemon, refusedSender, logFiles } = await launch(dir, port, tlsPort);
      return {
        name,
        port,
        tlsPort,
        refusedSender,
        pid: daemon.pid,
        dir,
        log: () => `${daemon.output()}${logFiles?.() ?? ''}`,
        async close() {
          await daemon.stop();
          removeDirectory(dir);
        },
      };
    } catch (error) {
      removeDirectory(dir);
      lastError = error;
    }
  }
  throw lastError;
}

/**
 * A fresh self-signed certificate for `hostName` (ECDSA P-256: fast to make, and every TLS
 * library under test takes it), written as key.pem and cert.pem in `dir`.
 */
export function selfSignedCertificate(
  dir: string,
  hostName: string,
): { key: string; cert: string } {
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  const made = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      `/CN=${hostName}`,
    ],
    { encoding: 'utf8' },
  );
  if (made.status !== 0) throw new Error(`openssl could not make a certificate: ${made.stderr}`);
  return { key, cert };
}

/** One server process (and its children, in the process group it leads). */
export interface Daemon {
  readonly pid: number;
  /** Its standard output and error so far (the last 256 KiB). */
  output(): string;
  /** SIGTERM to the group, SIGKILL after 5 s; then SIGKILL to whatever of the group is left. */
  stop(): Promise<void>;
}

const OUTPUT_CAP = 256 * 1024;
const running = new Set<ChildProcess>();

// A test file that dies (a failed beforeAll, a worker torn down) still takes its servers along.
process.once('exit', () => {
  for (const child of running) killGroup(child, 'SIGKILL');
});

/**
 * Starts `command` in a process group of its own and resolves once every port in `ports`
 * answers with a 220 banner; rejects with the server's output when it exits first or stays
 * silent for `readyMs`.
 */
export async function startDaemon(options: {
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly ports: readonly number[];
  readonly readyMs?: number;
}): Promise<Daemon> {
  const child = spawn(options.command, options.args, {
    detached: true,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) {
    await new Promise((resolve) => child.once('error', resolve));
    throw new Error(`${options.command} could not be started`);
  }
  running.add(child);
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_CAP);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const daemon: Daemon = {
    pid: child.pid,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        killGroup(child, 'SIGTERM');
        const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      // Children the leader left behind (a session still closing) go with it.
      killGroup(child, 'SIGKILL');
      running.delete(child);
    },
  };

  const deadline = Date.now() + (options.readyMs ?? 30_000);
  try {
    await Promise.race([
      Promise.all(options.ports.map((port) => waitForBanner(port, deadline))),
      exited.then(() => {
        throw new Error(`exited at start (code ${child.exitCode})`);
      }),
    ]);
  } catch (error) {
    await daemon.stop();
    throw new Error(
      `${options.command} did not start: ${(error as Error).message}\n${output.trim()}`,
    );
  }
  return daemon;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: nothing of the group is left.
  }
}

/** Whether any process of the group led by `pid` is still alive (zombies aside). */
export function groupAlive(pid: number): boolean {
  const listed = spawnSync('ps', ['-e', '-o', 'pgid=,stat='], { encoding: 'utf8' });
  return listed.stdout.split('\n').some((line) => {
    const [group, state = ''] = line.trim().split(/\s+/);
    return Number(group) === pid && !state.startsWith('Z');
  });
}

/** Resolves when a connection to 127.0.0.1:`port` reads a 220 greeting; polls until `deadline`. */
function waitForBanner(port: number, deadline: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      const retry = (why: string) => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`no 220 banner on port ${port}: ${why}`));
        else setTimeout(attempt, 50);
      };
      socket.setTimeout(2_000, () => retry('silent'));
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        if (!text.includes('\r\n')) return;
        if (/^220[ -]/.test(text)) {
          socket.end('QUIT\r\n');
          socket.destroy();
          resolve();
        } else retry(`greeted with ${JSON.stringify(text.slice(0, 80))}`);
      });
      socket.once('error', (error) => retry(error.message));
    };
    attempt();
  });
}

function removeDirectory(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
