import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';

/**
 * A real redis-server on a loopback port, started and stopped by the test that needs it.
 * Debian's redis-server is installed by .ci/run; on a machine without it the Redis tests skip
 * with a notice, except under MAILVERDICT_REQUIRE_REDIS=1 (CI), where its absence fails.
 */
export const REDIS_REQUIRED = process.env.MAILVERDICT_REQUIRE_REDIS === '1';

const REDIS_BINARY = findRedisServer();

function findRedisServer(): string | undefined {
  for (const candidate of ['redis-server', '/usr/bin/redis-server', '/usr/sbin/redis-server']) {
    const probe = spawnSync(candidate, ['--version'], { encoding: 'utf8' });
    if (probe.status === 0) return candidate;
  }
  return undefined;
}

/** Whether Redis tests can run here; prints why not once, and throws when CI requires them. */
export function redisAvailable(): boolean {
  if (REDIS_BINARY !== undefined) return true;
  if (REDIS_REQUIRED) throw new Error('redis-server is not installed, and CI requires it');
  console.warn('[notice] redis-server is not installed: the Redis tests are skipped.');
  return false;
}

export interface RedisServerOptions {
  /**
   * Keep data across restart(): an append-only file fsynced on every write, as a production
   * Redis that must not lose a job would run. Default false (nothing written to disk).
   */
  readonly durable?: boolean;
}

export interface RedisTestServer {
  readonly port: number;
  /** redis://127.0.0.1:<port> */
  readonly url: string;
  /** The server process's id while it runs (benchmarks read its CPU time). */
  pid(): number | undefined;
  /** Stops the server (SIGTERM, as an operator's restart would) and starts it on the same port. */
  restart(options?: { downMs?: number }): Promise<void>;
  /** Stops the server without starting it again. */
  stop(): Promise<void>;
  /** Stops it for good and removes its directory. */
  close(): Promise<void>;
}

/** Starts redis-server on a free loopback port (a few tries: a port can be taken meanwhile). */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisTestServer> {
  if (REDIS_BINARY === undefined) throw new Error('redis-server is not installed');
  const binary = REDIS_BINARY;
  const dir = mkdtempSync(join(tmpdir(), 'mailverdict-redis-'));
  let port = 0;
  let child: ChildProcess | undefined;
  for (let attempt = 0; attempt < 5 && child === undefined; attempt++) {
    port = await freePort();
    child = await launch(binary, port, dir, options).catch(() => undefined);
  }
  if (child === undefined) throw new Error('redis-server did not start');
  let running: ChildProcess | undefined = child;

  const stop = async () => {
    const current = running;
    running = undefined;
    if (current === undefined || current.exitCode !== null) return;
    const exited = new Promise((resolve) => current.once('exit', resolve));
    current.kill('SIGTERM');
    await exited;
  };
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    pid: () => running?.pid,
    async restart({ downMs = 0 } = {}) {
      await stop();
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      running = await launch(binary, port, dir, options);
    },
    stop,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function launch(
  binary: string,
  port: number,
  dir: string,
  { durable = false }: RedisServerOptions,
): Promise<ChildProcess> {
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    durable ? 'yes' : 'no',
    '--appendfsync',
    'always',
    // BullMQ asks for this: evicting its keys would lose jobs.
    '--maxmemory-policy',
    'noeviction',
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
  ];
  const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 10_000;
    const onExit = () => reject(new Error(`redis-server exited at start: ${stderr.trim()}`));
    child.once('exit', onExit);
    const poll = () => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.write('PING\r\n');
        socket.once('data', (data) => {
          socket.destroy();
          // A server still loading its append-only file answers -LOADING: wait for PONG.
          if (data.toString().startsWith('+PONG')) {
            child.off('exit', onExit);
            resolve(child);
          } else retry();
        });
      });
      socket.once('error', () => {
        socket.destroy();
        retry();
      });
    };
    const retry = () => {
      if (child.exitCode !== null) return;
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        reject(new Error('redis-server did not answer within 10 s'));
      } else setTimeout(poll, 25);
    };
    poll();
  });
}
