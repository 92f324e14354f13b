import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runInProcess, startCli } from '../helpers/cli.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { jsonLines } from '../helpers/logger.js';
import { redisAvailable, startRedisServer, type RedisTestServer } from '../helpers/redis-server.js';

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

  it("the engine's warnings are log lines too: a lying resolver is one warn line, nothing else on stderr", async () => {
    // A resolver that denies every name, gmail.com included: the canary's warning. It went to
    // stderr as a plain `mailverdict: warning: ...` line among the JSON ones.
    const dns = await startDnsServer({}, { rcode: 'NXDOMAIN' });
    try {
      const serve = startCli([
        'serve',
        '--db',
        join(dir, 'warning.db'),
        '--port',
        '0',
        '--dns-server',
        dns.address,
      ]);
      const key = (await serve.waitFor(/^mv_sk_\S+$/m))[0];
      const url = (await serve.waitFor(/Listening on (http:\/\/\S+) /))[1] as string;
      const answer = await fetch(`${url}/v1/verify?email=ann@nowhere-at-all.com&method=quick`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(await answer.json()).toMatchObject({ state: 'risky', reason: 'no_connect' });
      expect(await serve.stop()).toBe(0);
      const stderr = serve
        .output()
        .split('\n')
        .filter((line) => line !== '' && line !== key);
      for (const line of stderr) expect(line, 'a line that is not JSON').toMatch(/^\{.*\}$/);
      const warnings = jsonLines(serve.output()).filter((line) => line.event === 'dns.warning');
      expect(warnings).toEqual([
        expect.objectContaining({
          level: 'warn',
          msg: expect.stringContaining('it is not answering truthfully'),
        }),
      ]);
    } finally {
      await dns.close();
    }
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

/** Runs the CLI and answers its stdout, after checking that it exited 0. */
async function ok(args: string[]): Promise<string> {
  const run = await runCli(args);
  expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
  return run.stdout;
}

const jsonOf = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** The operator commands on a store (`--db file` or `--redis url`), as an operator runs them. */
async function operatorCommands(store: string[]): Promise<void> {
  const created = await runCli([
    'accounts',
    'create',
    '--email',
    'second@example.org',
    '--plan',
    'starter',
    '--credits',
    '25',
    ...store,
  ]);
  expect(created.code, created.stderr).toBe(0);
  // The id alone on stdout; how to make its key on stderr.
  expect(created.stdout).toMatch(/^acct_\w+\n$/);
  const id = created.stdout.trim();
  expect(created.stderr).toContain(`mailverdict keys create --account ${id}`);

  const listed = jsonOf(await ok(['accounts', 'list', '--json', ...store]));
  expect(listed.find((account) => account.id === id)).toMatchObject({
    email: 'second@example.org',
    plan: 'starter',
    credits: { available: 25, reserved: 0, used: 0, total: 25 },
  });
  // Never the webhook secret.
  expect(JSON.stringify(listed)).not.toContain('whsec_');
  expect(await ok(['accounts', 'list', ...store])).toMatch(
    new RegExp(`^${id}\\s+second@example\\.org\\s+starter\\s+25\\s+0\\s+0\\s`, 'm'),
  );

  expect(await ok(['accounts', 'plan', 'professional', '--account', id, ...store])).toMatch(
    /professional plan: 120 requests a minute, 50000 a day/,
  );
  const changed = jsonOf(await ok(['accounts', 'list', '--json', ...store]));
  expect(changed.find((account) => account.id === id)?.plan).toBe('professional');

  expect(jsonOf(await ok(['credits', 'balance', '--json', '--account', id, ...store]))).toEqual([
    { account_id: id, available: 25, reserved: 0, used: 0, total: 25 },
  ]);
  await ok(['credits', 'grant', '5', '--note', 'top-up', '--account', id, ...store]);
  expect(await ok(['credits', 'balance', '--account', id, ...store])).toBe(
    `${id}: available 30, reserved 0, used 0, total 30.\n`,
  );
  const ledger = jsonOf(await ok(['credits', 'ledger', '--json', '--account', id, ...store]));
  expect(ledger).toMatchObject([
    { kind: 'grant', amount: 25, delta: 25 },
    { kind: 'grant', amount: 5, delta: 5, note: 'top-up' },
  ]);
  const table = await ok(['credits', 'ledger', '--account', id, ...store]);
  expect(table).toMatch(/^SEQ\s+AT\s+KIND\s+AMOUNT\s+DELTA\s+REF\s+NOTE\n/);
  expect(table).toMatch(/\sgrant\s+5\s+\+5\s+\S+\s+top-up\n$/);
  // A page at a time: a full page says how to read on.
  const page = await runCli([
    'credits',
    'ledger',
    '--json',
    '--limit',
    '1',
    '--account',
    id,
    ...store,
  ]);
  expect(jsonOf(page.stdout)).toHaveLength(1);
  const next = /--after (\d+)/.exec(page.stderr)?.[1] as string;
  const rest = jsonOf(
    await ok(['credits', 'ledger', '--json', '--after', next, '--account', id, ...store]),
  );
  expect(rest).toMatchObject([{ amount: 5, note: 'top-up' }]);

  // Its key, made as any key is.
  expect(await ok(['keys', 'create', '--account', id, ...store])).toMatch(/^mv_sk_/);

  // Refusals: one line, exit 2, nothing changed (run in this process: the same code, no spawn
  // for each).
  for (const args of [
    ['accounts', 'plan', 'gold', '--account', id],
    ['accounts', 'plan', 'free'], // two accounts: which one?
    ['accounts', 'plan', 'free', '--account', 'acct_nope'],
    ['accounts', 'create', '--email', 'not an address'],
    ['accounts', 'create', '--email', 'x@example.org', '--credits', '-1'],
    ['accounts', 'create', '--email', 'x@example.org', '--plan', 'gold'],
    ['credits', 'ledger', '--limit', '0', '--account', id],
    ['credits', 'ledger', '--limit', '1e3', '--account', id],
    ['webhooks', 'list', '--limit', '5000', '--account', id],
  ]) {
    const refused = await runInProcess([...args, ...store]);
    expectOneLine({ code: refused.code, stderr: refused.err }, 2);
  }
  const after = jsonOf(await ok(['accounts', 'list', '--json', ...store]));
  expect(after).toHaveLength(listed.length);
  expect(after.find((account) => account.id === id)).toMatchObject({
    plan: 'professional',
    credits: { available: 30 },
  });
}

describe('operator commands', () => {
  it('accounts create, list and plan, credits balance and ledger, on a SQLite file', async () => {
    const db = join(dir, 'operator.db');
    // serve's first start makes the file and its first account.
    const serve = startCli(['serve', '--db', db, '--port', '0', '--offline']);
    await serve.waitFor(/Listening on/);
    expect(await serve.stop()).toBe(0);
    await operatorCommands(['--db', db]);
  }, 180_000);

  const withRedis = redisAvailable() ? it : it.skip;
  withRedis(
    'the same on Redis, where no serve needs to have run',
    async () => {
      const redis: RedisTestServer = await startRedisServer();
      try {
        // A second account first, as serve's first start makes one on a file.
        await ok(['accounts', 'create', '--email', 'owner@example.org', '--redis', redis.url]);
        await operatorCommands(['--redis', redis.url]);
      } finally {
        await redis.stop();
      }
    },
    180_000,
  );
});
