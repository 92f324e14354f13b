import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import {
  batchAgainst,
  CLI_NODE_ARGS as NODE_ARGS,
  CLI_ROOT as ROOT,
  fastThenSilentAddresses,
  runCli,
  runPipeline,
  signalAfter,
  startServe,
  startFastAndSilentDns,
  type CliOptions,
  type CliRun as Run,
} from '../helpers/cli.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';
import { rawRequest } from '../helpers/raw-http.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * The CLI as a new user and a hostile input source use it: a separate process, real pipes and
 * signals. Every server here listens on 127.0.0.1 port 0; verifications run --offline or
 * against the loopback DNS server.
 */
function cli(args: string[], options: CliOptions = {}): Promise<Run> {
  return runCli(args, { ...options, env: { NO_COLOR: '1' } });
}

/** A shell pipeline, for what only a real pipe shows (EPIPE when the reader goes away). */
const shell = runPipeline;

/** What every refusal looks like: exit 2, one line on stderr naming us, no stack trace. */
function expectOneLineUsageError(run: Run, label: string): void {
  expect(run.code, label).toBe(2);
  const lines = run.stderr.trimEnd().split('\n');
  expect(lines, `${label}: ${run.stderr}`).toHaveLength(1);
  expect(lines[0], label).toMatch(/^mailverdict: \S/);
  expect(run.stderr, label).not.toContain('    at ');
}

const inputs = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { input: string }).input);

let dir: string;
let dns: TestDnsServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mailverdict-cli-process-'));
  dns = await startFastAndSilentDns();
});
afterAll(async () => {
  await dns.close();
});

describe('usage and help', () => {
  it('a mistake in the call is one line on stderr, prefixed, with exit 2', async () => {
    for (const args of [
      ['bogus'],
      ['--bogus'],
      ['verfy', 'a@b.co'],
      ['verify', '--jsn', 'a@b.co'],
      ['verify'],
      ['batch'],
      ['batch', '-o'],
      ['batch', '-', '--output', 'xml'],
      ['filters', 'add', 'x.org', '--type', 'dom', '--action', 'block'],
      ['keys', 'bogus'],
    ]) {
      expectOneLineUsageError(await cli(args), args.join(' '));
    }
  });

  it('an address that starts with - gets a hint to put -- before it, and -- works', async () => {
    const refused = await cli(['verify', '--offline', '-foo@example.org']);
    expectOneLineUsageError(refused, '-foo@example.org');
    expect(refused.stderr).toMatch(/put -- before it/);
    const verified = await cli(['verify', '--offline', '--', '-foo@example.org']);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/^-foo@example\.org\s+deliverable/m);
  });

  it('-o given a file name says that -o is the format and how to write a file', async () => {
    const run = await cli(['batch', '--offline', '-o', '/nonexistent/dir/out.csv', '-']);
    expectOneLineUsageError(run, '-o file');
    expect(run.stderr).toMatch(/ndjson, csv/);
    expect(run.stderr).toMatch(/redirect/);
  });

  it('an option or command name from the input is escaped on stderr', async () => {
    const run = await cli(['verify', '--\u001b[2J\u202e', 'a@b.co']);
    expectOneLineUsageError(run, 'escaped');
    // eslint-disable-next-line no-control-regex -- the characters that must not appear
    expect(run.stderr).not.toMatch(/[\u001b\u202e]/);
  });

  it('help <command> prints that command’s usage on stdout, nested ones too', async () => {
    for (const name of ['verify', 'batch', 'serve', 'worker', 'keys', 'credits', 'filters']) {
      const run = await cli(['help', name]);
      expect(run.code, name).toBe(0);
      expect(run.stdout, name).toMatch(new RegExp(`^Usage: mailverdict ${name} `));
    }
    const nested = await cli(['help', 'keys', 'create']);
    expect(nested.code).toBe(0);
    expect(nested.stdout).toMatch(/^Usage: mailverdict keys create /);
    expectOneLineUsageError(await cli(['help', 'bogus']), 'help bogus');
  });

  it('numbers are whole decimal numbers: 1e1, 0x10 and an empty string are refused', async () => {
    for (const args of [
      ['verify', '--offline', '--concurrency', '1e1', 'a@b.co'],
      ['verify', '--offline', '--dns-timeout', '0x10', 'a@b.co'],
      ['verify', '--offline', '--concurrency', ' 5', 'a@b.co'],
      ['serve', '--offline', '--port', '', '--db', join(dir, 'never.db')],
      ['serve', '--offline', '--port', '0', '--credits', '1e3', '--db', join(dir, 'never.db')],
    ]) {
      expectOneLineUsageError(await cli(args), args.join(' '));
    }
  });
});

describe('verify', () => {
  it('--json carries input, state, reason, score, risk factors and error for hostile input', async () => {
    const evil = ['a\u001b]0;owned\u0007@x.org', 'b\u202e@x.org', `${'c'.repeat(5000)}@x.org`, ''];
    const run = await cli(['verify', '--offline', '--json', ...evil]);
    expect(run.code).toBe(0);
    const records = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.map((r) => r.input)).toEqual(evil);
    for (const record of records) {
      expect(Object.keys(record)).toEqual(
        expect.arrayContaining(['input', 'state', 'reason', 'score', 'risk_factors', 'error']),
      );
    }
    // eslint-disable-next-line no-control-regex -- the characters that must not appear
    expect(run.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
  });

  it('stops quietly when the reader of its output goes away (| head -1)', async () => {
    const many = Array.from({ length: 3000 }, (_, i) => `u${i}@example.org`).join(' ');
    const run = await shell(`$MV verify --offline ${many} | head -1`);
    expect(run.stdout).toMatch(/^ADDRESS\s+STATE/);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
  });
});

describe('batch input', () => {
  const expectTwo = async (name: string, bytes: Buffer, extra: string[] = []) => {
    const file = join(dir, name);
    writeFileSync(file, bytes);
    const run = await cli(['batch', '--offline', ...extra, file]);
    expect(run.code, `${name}: ${run.code} ${run.signal} ${run.stderr}`).toBe(0);
    expect(inputs(run.stdout), name).toEqual(['ann@example.org', 'bob@example.org']);
    expect(run.stderr, name).toMatch(/Verified 2 addresses/);
  };

  it('reads lone-CR (classic Mac) line endings as lines', async () => {
    await expectTwo('cr.txt', Buffer.from('ann@example.org\rbob@example.org\r'));
    await expectTwo('mixed.txt', Buffer.from('ann@example.org\r\n\r\rbob@example.org\n'));
  });

  it('reads UTF-16 LE and BE with a byte order mark (Excel’s "Unicode text")', async () => {
    const text = '\ufeffann@example.org\r\nbob@example.org\r\n';
    await expectTwo('le.txt', Buffer.from(text, 'utf16le'));
    await expectTwo('be.txt', Buffer.from(text, 'utf16le').swap16());
    await expectTwo(
      'le.csv',
      Buffer.from(`\ufeffname,Email\r\nAnn,ann@example.org\r\nBob,bob@example.org\r\n`, 'utf16le'),
    );
  });

  it('a CSV without a header row loses no address', async () => {
    await expectTwo('headerless.csv', Buffer.from('ann@example.org,Ann\nbob@example.org,Bob\n'));
    await expectTwo('one.csv', Buffer.from('ann@example.org\nbob@example.org\n'));
  });

  it('finds the email column under its usual spellings', async () => {
    for (const header of ['E-mail', ' EMAIL ', 'Email Address', 'email_address']) {
      await expectTwo(
        'spelled.csv',
        Buffer.from(`name,"${header}"\n"Doe, Ann",ann@example.org\n"Bob\nSmith",bob@example.org\n`),
      );
    }
    await expectTwo('address.csv', Buffer.from('address\nann@example.org\nbob@example.org\n'));
    await expectTwo(
      'named.csv',
      Buffer.from('email,work\nx@example.org,ann@example.org\ny@example.org,bob@example.org\n'),
      ['--column', 'Work'],
    );
  });

  it('reads the separator a spreadsheet wrote: semicolons (Excel in Europe) and tabs', async () => {
    await expectTwo(
      'semicolons.csv',
      Buffer.from('Name;E-Mail\n"Doe; Ann";ann@example.org\nBob;bob@example.org\n'),
    );
    await expectTwo(
      'tabs.csv',
      Buffer.from('name\temail\nAnn\tann@example.org\nBob\tbob@example.org\n'),
    );
    // A comma file whose fields hold semicolons stays a comma file.
    await expectTwo(
      'commas.csv',
      Buffer.from('name,email\n"a;b;c",ann@example.org\nd,bob@example.org\n'),
    );
  });

  it('refuses a CSV with no email column instead of verifying another one', async () => {
    const file = join(dir, 'phones.csv');
    writeFileSync(file, 'name,phone\nAnn,555-0100\n');
    const run = await cli(['batch', '--offline', file]);
    expectOneLineUsageError(run, 'no email column');
    expect(run.stderr).toMatch(/"name", "phone"/);
    expect(run.stderr).toMatch(/--column/);
    expect(run.stdout).toBe('');
  });

  it('escapes a hostile CSV header in its error message', async () => {
    const file = join(dir, 'evil-header.csv');
    writeFileSync(file, 'name,\u001b[2Jphone\u202e\nAnn,1\n');
    const run = await cli(['batch', '--offline', file]);
    expectOneLineUsageError(run, 'evil header');
    // eslint-disable-next-line no-control-regex -- the characters that must not appear
    expect(run.stderr).not.toMatch(/[\u001b\u202e]/);
  });

  it('says "1 address", not "1 addresses"', async () => {
    const run = await cli(['batch', '--offline', '-'], { stdin: 'ann@example.org\n' });
    expect(run.stderr).toMatch(/^Verified 1 address in /m);
  });
});

describe('batch output', () => {
  it('CSV cells a spreadsheet would run as a formula are neutralized; NDJSON stays raw', async () => {
    const formulas = ['=1+2@x.org', '+1@x.org', '-2@x.org', '@3@x.org'];
    const csv = await cli(['batch', '--offline', '-o', 'csv', '-'], {
      stdin: formulas.join('\n'),
    });
    expect(csv.code).toBe(0);
    const rows = parseCsv(csv.stdout) as string[][];
    for (const row of rows.slice(1)) {
      for (const cell of row) expect(cell, row.join(',')).not.toMatch(/^[=+\-@\t\r]/);
    }
    // Column 1 is the index, column 2 the input.
    expect(rows.slice(1).map((row) => row[1])).toEqual(formulas.map((f) => `'${f}`));
    const ndjson = await cli(['batch', '--offline', '-'], { stdin: formulas.join('\n') });
    expect(inputs(ndjson.stdout)).toEqual(formulas);
  });

  it('stops quietly when the reader goes away (| head -1), NDJSON and CSV', async () => {
    const file = join(dir, 'ten-thousand.txt');
    writeFileSync(file, Array.from({ length: 10_000 }, (_, i) => `u${i}@example.org`).join('\n'));
    for (const format of ['ndjson', 'csv']) {
      const run = await shell(`$MV batch --offline -o ${format} ${file} | head -1`);
      expect(run.stdout.split('\n').filter(Boolean), format).toHaveLength(1);
      expect(run.stderr, format).toBe('');
      expect(run.code, format).toBe(0);
    }
  });
});

describe('batch signals', () => {
  const lines = fastThenSilentAddresses();
  const args = () => batchAgainst(dns);

  it('SIGTERM mid-run writes what is done, says how far it got, and exits 143', async () => {
    const stop = signalAfter(100, 'SIGTERM');
    const run = await cli(args(), { stdin: lines.join('\n'), whenOutput: stop.whenOutput });
    expect(stop.sent()).toBe(true);
    expect(run.code).toBe(143);
    expect(inputs(run.stdout).slice(0, 100)).toEqual(lines.slice(0, 100));
    expect(run.stderr).toMatch(/Interrupted: 100 of 500 addresses read were verified and written/);
  });

  it('writes the records of what it read while standard input stays open (tail -f | batch -)', async () => {
    const child = spawn(process.execPath, [...NODE_ARGS, 'batch', '--offline', '-'], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    let stdout = '';
    const threeRecords = new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.split('\n').length > 3) resolve();
      });
    });
    // Three lines, far fewer than the engine reads ahead, and the writer stays: the records
    // must come while it is silent, not once it closes.
    child.stdin.write('ann@example.org\nbob@example.org\nbad..dots@example.org\n');
    try {
      await threeRecords;
    } finally {
      // A run that holds its records would otherwise outlive the test.
      if (stdout.split('\n').length <= 3) child.kill('SIGKILL');
    }
    const records = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { input: string });
    expect(records.map((record) => record.input)).toEqual([
      'ann@example.org',
      'bob@example.org',
      'bad..dots@example.org',
    ]);
    child.stdin.end();
    expect(await exited).toBe(0);
  });

  it('Ctrl-C stops a run whose standard input is still open', async () => {
    // Fewer lines than the engine reads ahead with --concurrency 10000 (500,000), so the run
    // is waiting for more input when the signal comes (what it read is verified and written
    // meanwhile); far more than a pipe holds (2 MB), so that the write completing means the
    // CLI is reading, its signal handlers in place.
    const open = Array.from({ length: 100_000 }, (_, i) => `user${i}@example.org`);
    const child = spawn(
      process.execPath,
      [...NODE_ARGS, 'batch', '--offline', '--concurrency', '10000', '-'],
      { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stdout.resume();
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    child.stdin.on('error', () => {});
    child.stdin.write(`${open.join('\n')}\n`, () => child.kill('SIGINT'));
    expect(await exited).toBe(130);
    expect(stderr).toMatch(/^Interrupted: \d+ of \d+ addresses read were verified and written/);
    child.stdin.destroy();
  });
});

describe('serve', () => {
  it('an unusable --db is one line naming the file, not a missing dependency', async () => {
    for (const db of ['/nonexistent/dir/x.db', dir]) {
      const run = await cli(['serve', '--offline', '--port', '0', '--db', db]);
      expectOneLineUsageError(run, db);
      expect(run.stderr).toContain(db);
      expect(run.stderr).not.toMatch(/better-sqlite3/);
    }
  });

  it('a port in use, a bad --base-url, --trusted-proxy or limit: one line, no account made', async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const db = join(dir, 'first.db');
      for (const extra of [
        ['--port', String(port)],
        ['--port', '0', '--base-url', 'not a url'],
        ['--port', '0', '--base-url', 'ftp://api.example.com/'],
        ['--port', '0', '--trusted-proxy', 'xyz'],
        ['--port', '0', '--max-headers', '0'],
        ['--port', '0', '--max-json-depth', '1e3'],
        ['--port', '0', '--keep-alive-timeout', String(2 ** 31)],
        ['--port', '0', '--write-timeout', '0'],
        ['--port', '0', '--slice-ms', '0'],
        ['--port', '0', '--slice-ms', '5000'],
        ['--port', '0', '--headers-timeout', '5000', '--request-timeout', '1000'],
      ]) {
        const run = await cli(['serve', '--offline', '--db', db, ...extra]);
        expect(run.code, extra.join(' ')).not.toBe(0);
        expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
        expect(run.stderr).toMatch(/^mailverdict: /);
        // The account (and its key, shown once) waits for a start that works.
        expect(run.stdout, extra.join(' ')).toBe('');
      }
      expect((await cli(['keys', 'list', '--db', db])).stderr).toMatch(/has no account yet/);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

describe('serve: the limits and timeouts of its connections', () => {
  it('answers by the flags: 431 past --max-headers, 413 past --max-body-bytes, 400 past --max-json-depth, 408 past --headers-timeout', async () => {
    const serve = await startServe(join(dir, 'limits.db'), [
      '--max-headers',
      '20',
      '--max-body-bytes',
      '1000',
      '--max-json-depth',
      '2',
      '--headers-timeout',
      '300',
      '--request-timeout',
      '600',
      // Taken, and at work in test/integration/http-downloads.test.ts and the batch tests.
      '--write-timeout',
      '1000',
      '--slice-ms',
      '2',
    ]);
    try {
      const { port } = new URL(serve.url);
      const headers = (n: number) => Array.from({ length: n }, (_, i) => `X-${i}: 1`);
      const get = (more: string[]) =>
        rawRequest(
          Number(port),
          ['GET /v1/openapi.json HTTP/1.1', 'Host: a', ...more, '', ''].join('\r\n'),
        );
      // Host is one of them.
      expect((await get(headers(19))).status).toBe(200);
      expect((await get(headers(20))).status).toBe(431);
      const post = (body: string) =>
        fetch(`${serve.url}/v1/filters`, {
          method: 'POST',
          headers: { authorization: `Bearer ${serve.key}`, 'content-type': 'application/json' },
          body,
        });
      expect((await post(`{"value":"${'a'.repeat(1000)}"}`)).status).toBe(413);
      const deep = await post('{"value":[["a.example"]]}');
      expect(deep.status).toBe(400);
      expect(await deep.json()).toMatchObject({ field: 'body' });
      const slow = await rawRequest(Number(port), 'GET /v1/openapi.json HTTP/1.1\r\nHost: a\r\n');
      expect(slow.status).toBe(408);
    } finally {
      await serve.stop();
    }
  });
});

describe('serve --base-url', () => {
  it("is where a finished job's webhook points, not only its status", async () => {
    const hooks = await startWebhookReceiver();
    const delivered = hooks.first().then((hit) => JSON.parse(hit.body) as { download_url: string });
    const child = spawn(
      process.execPath,
      [
        ...NODE_ARGS,
        'serve',
        '--offline',
        '--allow-private-networks',
        '--db',
        join(dir, 'base-url.db'),
        '--port',
        '0',
        '--base-url',
        'https://api.example.com/mv',
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      // The key (stdout) and the line that says it listens (stderr), in whichever order.
      const [url, secret] = await new Promise<[string, string]>((resolve, reject) => {
        const ready = () => {
          const listening = /Listening on (\S+) /.exec(stderr)?.[1];
          const key = /mv_sk_\w+/.exec(stdout)?.[0];
          if (listening !== undefined && key !== undefined) resolve([listening, key]);
        };
        child.stdout.on('data', ready);
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          ready();
        });
        void exited.then(() => reject(new Error(stderr)));
      });
      const submitted = await fetch(`${url}/v1/verify`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          emails: ['ann@example.org', 'bob@example.org'],
          method: 'quick',
          callback_url: hooks.url,
        }),
      });
      expect(submitted.status).toBe(202);
      const { id } = (await submitted.json()) as { id: string };
      expect((await delivered).download_url).toBe(
        `https://api.example.com/mv/v1/verify/${id}/results`,
      );
    } finally {
      child.kill('SIGTERM');
      await exited;
      await hooks.close();
    }
  });
});

describe('admin commands', () => {
  it('refuse amounts that are not plain whole numbers, and change nothing', async () => {
    const db = join(dir, 'admin.db');
    await startAndStop(db);
    for (const amount of ['1e3', '0x10', ' 12 ', '-5', '0', '1.5', '', '99999999999999999999']) {
      expectOneLineUsageError(await cli(['credits', 'grant', amount, '--db', db]), amount);
    }
    for (const args of [
      ['keys', 'rotate', 'key_nope', '--grace', '1e3'],
      ['filters', 'list', '--page', '0x2'],
      ['filters', 'list', '--per-page', '1e1'],
    ]) {
      expectOneLineUsageError(await cli([...args, '--db', db]), args.join(' '));
    }
    const granted = await cli(['credits', 'grant', '1', '--db', db]);
    expect(granted.stdout).toMatch(/available 1001,/);
  });
});

describe('admin --json', () => {
  it('prints the API’s wire shapes: snake_case, ISO 8601 times', async () => {
    const db = join(dir, 'wire.db');
    await startAndStop(db);
    const added = await cli([
      'filters',
      'add',
      'spam.example',
      '--type',
      'domain',
      '--action',
      'block',
      '--db',
      db,
    ]);
    expect(JSON.parse(added.stdout)).toEqual({
      id: expect.stringMatching(/^flt_/) as unknown,
      filter_type: 'domain',
      value: 'spam.example',
      action: 'block',
      reason: null,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
    });
    const page = await cli(['filters', 'list', '--json', '--db', db]);
    expect(JSON.parse(page.stdout)).toMatchObject({ total: 1, page: 1, per_page: 25 });
    const keys = await cli(['keys', 'list', '--json', '--db', db]);
    const key = JSON.parse(keys.stdout.split('\n')[0] as string) as Record<string, unknown>;
    expect(key).toMatchObject({
      kind: 'private',
      name: 'first key',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
      revoked_at: null,
    });
    expect(Object.keys(key).filter((name) => /[A-Z]/.test(name))).toEqual([]);
  });
});

/** Starts serve on a fresh file (creating its account), then stops it with SIGTERM. */
async function startAndStop(db: string): Promise<void> {
  let resolveListening: () => void = () => {};
  const listening = new Promise<void>((resolve) => (resolveListening = resolve));
  const child = spawn(
    process.execPath,
    [...NODE_ARGS, 'serve', '--db', db, '--port', '0', '--host', '127.0.0.1', '--offline'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stdout.resume();
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.includes('Listening on')) resolveListening();
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  await Promise.race([listening, exited.then(() => Promise.reject(new Error(stderr)))]);
  child.kill('SIGTERM');
  expect(await exited).toBe(0);
}

describe('connection flags', () => {
  it('a bad --dns-server, --helo or --mail-from is a usage error before anything runs', async () => {
    for (const flags of [
      ['--dns-server', 'bogus'],
      ['--dns-server', '1.2.3.4:99999'],
      ['--helo', 'mx.example.com\r\nQUIT'],
      ['--helo', 'two words'],
      ['--mail-from', 'probe@example.com>'],
    ]) {
      expectOneLineUsageError(
        await cli(['verify', '--offline', ...flags, 'a@b.co']),
        flags.join(' '),
      );
    }
  });
});

describe('batch --column', () => {
  it('reads the input as CSV whatever the file is called', async () => {
    const file = join(dir, 'export.txt');
    writeFileSync(file, 'name,Work Email\nAnn,ann@example.org\nBob,bob@example.org\n');
    const run = await cli(['batch', '--offline', '--column', 'work email', file]);
    expect(run.code, run.stderr).toBe(0);
    expect(inputs(run.stdout)).toEqual(['ann@example.org', 'bob@example.org']);
  });
});

describe('batch sources', () => {
  it('reads a pipe given as a file (process substitution), and refuses a directory', async () => {
    const run = await shell(`$MV batch --offline <(printf 'ann@example.org\\nbob@example.org\\n')`);
    expect(run.code, run.stderr).toBe(0);
    expect(inputs(run.stdout)).toEqual(['ann@example.org', 'bob@example.org']);
    const directory = await cli(['batch', '--offline', dir]);
    expectOneLineUsageError(directory, 'directory');
    expect(directory.stderr).toMatch(/is a directory/);
  });

  it('binary garbage read as CSV is one short line, not the garbage quoted back', async () => {
    const file = join(dir, 'garbage.csv');
    const garbage = Buffer.alloc(20_000);
    for (let i = 0; i < garbage.length; i++) garbage[i] = (i * 7919) % 256;
    writeFileSync(file, Buffer.concat([Buffer.from('email,"x\n'), garbage]));
    const run = await cli(['batch', '--offline', file]);
    expectOneLineUsageError(run, 'garbage');
    expect(run.stderr.length).toBeLessThan(200);
  });
});

describe('progress bar', () => {
  /** In-process, for what needs a terminal: streams that say they are one. */
  async function onTerminals(stdoutIsTty: boolean) {
    const stdout = Object.assign(new PassThrough(), { isTTY: stdoutIsTty });
    const stderr = Object.assign(new PassThrough(), { isTTY: true, columns: 80 });
    let err = '';
    stdout.resume();
    stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const io: CliIo = {
      stdout,
      stderr,
      stdin: Readable.from([Buffer.from('ann@example.org\nbob@example.org\n')]),
      onInterrupt: () => () => {},
    };
    expect(await main(['batch', '--offline', '-'], io)).toBe(0);
    return err;
  }

  it('is drawn on stderr when the records go elsewhere, never over records on the terminal', async () => {
    expect(await onTerminals(false)).toMatch(/verified \| \d+\/s/);
    // eslint-disable-next-line no-control-regex -- the bar's cursor controls
    expect(await onTerminals(true)).not.toMatch(/\u001b|verified \|/);
  });
});

describe('terminal safety', () => {
  it('invisible characters (zero-width space, RLM, BOM) are shown, not hidden', async () => {
    const run = await cli([
      'verify',
      '--offline',
      'a\u200bb@x.org',
      'ann\u200f@x.org',
      'c\ufeff@x.org',
    ]);
    expect(run.stdout).toContain('a\\u200bb@x.org');
    expect(run.stdout).toContain('ann\\u200f@x.org');
    expect(run.stdout).toContain('c\\ufeff@x.org');
    expect(run.stdout).not.toMatch(/[\u200b\u200f\ufeff]/);
  });
});

describe('warnings', () => {
  it('are one line in the CLI’s name, not Node’s "(node:1234) ..." and its hint', async () => {
    // A resolver that says every name is NXDOMAIN, gmail.com included: the canary warns.
    const liar = await startDnsServer({});
    try {
      const run = await cli([
        'verify',
        '--method',
        'quick',
        '--dns-server',
        liar.address,
        'ann@example.org',
      ]);
      expect(run.code).toBe(0);
      expect(run.stderr).toMatch(/^mailverdict: warning: The DNS resolver says/);
      expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(run.stderr).not.toMatch(/\(node:\d+\)|--trace-warnings/);
    } finally {
      await liar.close();
    }
  });
});

describe('verify table', () => {
  it('shows a very long input whole and escaped without padding every other row to it', async () => {
    const long = `${'a'.repeat(3000)}\u001b[2J@x.org`;
    const run = await cli(['verify', '--offline', long, 'ann@example.org']);
    expect(run.code).toBe(0);
    const [header, first, second] = run.stdout.split('\n');
    expect(first).toContain(`${'a'.repeat(3000)}\\u001b[2J@x.org`);
    expect(header?.length).toBeLessThan(200);
    expect(second).toMatch(/^ann@example\.org\s+deliverable/);
    expect(second?.length).toBeLessThan(200);
  });
});
