import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import { jsonLines } from '../helpers/logger.js';

/**
 * The operator's side of `serve` and `worker`, spawned as an operator runs them: what they
 * write on stderr (JSON lines) and how they exit.
 */
let dir: string;
let taken: Server;
let takenPort: number;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mailverdict-ops-'));
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  takenPort = (taken.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => taken.close(resolve));
});

/** A run that failed as the README's exit codes say: one line on stderr, no stack trace. */
function expectOneLine(run: { code: number | null; stderr: string }, code: number): string {
  expect(run.code, run.stderr).toBe(code);
  const lines = run.stderr.trim().split('\n');
  expect(lines, run.stderr).toHaveLength(1);
  expect(run.stderr).not.toContain('    at ');
  return lines[0] as string;
}

describe('exit codes of the long-running commands', () => {
  it('worker: a port in use is exit 2 in one line, before Redis is touched', async () => {
    // Nothing listens at redis://127.0.0.1:1: the port is refused before any connection.
    const run = await runCli([
      'worker',
      '--redis',
      'redis://127.0.0.1:1',
      '--port',
      String(takenPort),
      '--offline',
    ]);
    expect(expectOneLine(run, 2)).toBe(
      `mailverdict: cannot listen on 127.0.0.1:${takenPort}: the port is in use (--port 0 picks a free one)`,
    );
  });

  it('serve: a port in use is exit 2 in one line, and no account is created', async () => {
    const db = join(dir, 'in-use.db');
    const run = await runCli(['serve', '--db', db, '--port', String(takenPort), '--offline']);
    expect(expectOneLine(run, 2)).toMatch(/^mailverdict: cannot listen on .*the port is in use/);
    expect(run.stdout).toBe('');
  });

  it('--log-level must be a level: exit 2', async () => {
    const run = await runCli(['serve', '--db', join(dir, 'level.db'), '--log-level', 'loud']);
    expectOneLine(run, 2);
  });
});

describe('serve writes JSON lines on stderr', () => {
  it('start-up (address, store, base URL), the first account, the stop', async () => {
    const db = join(dir, 'lines.db');
    const serve = startCli(['serve', '--db', db, '--port', '0', '--offline']);
    await serve.waitFor(/Listening on/);
    expect(await serve.stop()).toBe(0);
    const lines = jsonLines(serve.output());
    const start = lines.find((line) => line.event === 'start');
    expect(start).toMatchObject({
      level: 'info',
      store: db,
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      msg: expect.stringMatching(/^Listening on http:\/\/127\.0\.0\.1:\d+ \(Ctrl-C to stop\)\.$/),
    });
    expect(start?.base_url).toBe(`${String(start?.url)}/`);
    expect(lines.find((line) => line.event === 'account.created')).toMatchObject({
      level: 'info',
      plan: 'enterprise',
    });
    expect(lines.at(-1)).toMatchObject({ event: 'stop', level: 'info' });
    for (const line of lines) expect(typeof line.time).toBe('string');
    // The key is on stdout alone, never in a log line.
    const key = /^mv_sk_\S+$/m.exec(serve.output())?.[0] as string;
    expect(JSON.stringify(lines)).not.toContain(key);
  });

  it('--log-level warn leaves out the info lines', async () => {
    const serve = startCli([
      'serve',
      '--db',
      join(dir, 'quiet.db'),
      '--port',
      '0',
      '--offline',
      '--log-level',
      'warn',
    ]);
    await serve.waitFor(/^mv_sk_\S+$/m);
    // Nothing says when it listens at this level: it is stopped once its key is out.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await serve.stop()).toBe(0);
    expect(jsonLines(serve.output())).toEqual([]);
  });
});
