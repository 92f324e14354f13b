import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  batchAgainst,
  CLI_NODE_ARGS,
  CLI_ROOT,
  fastThenSilentAddresses,
  runCli,
  runCliToFile,
  runTyped,
  signalAfter,
  startCli,
  startFastAndSilentDns,
  startSlowDns,
} from '../helpers/cli.js';
import type { TestDnsServer } from '../helpers/dns-server.js';
import { pause } from '../helpers/waiting.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

/** The CLI as a user runs it: a separate process, real pipes, real signals. */
const cli = runCli;

let dns: TestDnsServer;
let dir: string;
beforeAll(async () => {
  dns = await startFastAndSilentDns();
  dir = mkdtempSync(join(tmpdir(), 'mailverdict-cli-'));
});
afterAll(async () => {
  await dns.close();
});

describe('mailverdict CLI (spawned)', () => {
  it('verify --strict exits by the worst verdict', async () => {
    const run = await cli([
      'verify',
      '--strict',
      '--offline',
      'ann@example.org',
      'x@mailinator.com',
    ]);
    expect(run.code).toBe(3);
    expect(run.stdout).toMatch(/x@mailinator\.com\s+risky/);
  });

  it('batch from a file, piped: NDJSON, no progress bar, the summary on stderr', async () => {
    const file = join(dir, 'list.txt');
    writeFileSync(
      file,
      [
        'ann@example.org',
        'info@mailinator.com',
        'bad..x@example.org',
        'deliverable@example.com',
      ].join('\n'),
    );
    const run = await cli(['batch', '--offline', file]);
    expect(run.code).toBe(0);
    const records = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { input: string; state: string });
    expect(records.map((r) => [r.input, r.state])).toEqual([
      ['ann@example.org', 'deliverable'],
      ['info@mailinator.com', 'risky'],
      ['bad..x@example.org', 'undeliverable'],
      ['deliverable@example.com', 'deliverable'],
    ]);
    expect(run.stderr).not.toMatch(/ETA|%|\r/);
    expect(run.stderr).toMatch(/Verified 4 addresses/);
    expect(run.stderr).toMatch(/By state: deliverable 2, risky 1, undeliverable 1\./);
    expect(run.stderr).toMatch(/By reason: accepted_email 2, low_quality 1, invalid_email 1\./);
  });

  it('Ctrl-C mid-run writes what is done, reports how far it got, and exits 130', async () => {
    const lines = fastThenSilentAddresses();
    const stop = signalAfter(100, 'SIGINT');
    const run = await cli(batchAgainst(dns), {
      stdin: lines.join('\n'),
      whenOutput: stop.whenOutput,
    });
    expect(stop.sent()).toBe(true);
    expect(run.code).toBe(130);
    const records = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { input: string });
    expect(records.slice(0, 100).map((r) => r.input)).toEqual(lines.slice(0, 100));
    expect(run.stderr).toMatch(/Interrupted: 100 of 500 addresses read were verified and written/);
  });

  it('serve: the first start creates an account and prints its key once; keys, credits and filters work on the file', async () => {
    const db = join(dir, 'service.db');
    const first = await serveOnce(db);
    expect(first.key).toMatch(/^mv_sk_[0-9A-Za-z]{32,}$/);
    expect(first.account).toMatchObject({ credits: { available: 1000 } });
    const second = await serveOnce(db, undefined, false);
    expect(second.key).toBeUndefined();

    const made = await cli(['keys', 'create', '--db', db, '--name', 'ci']);
    expect(made.code).toBe(0);
    const secret = made.stdout.trim();
    expect(secret).toMatch(/^mv_sk_/);
    const listed = await cli(['keys', 'list', '--db', db, '--json']);
    const keys = listed.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; name: string | null });
    expect(keys.map((k) => k.name)).toEqual(['first key', 'ci']);
    expect(listed.stdout).not.toContain(secret);
    const ci = keys[1]?.id as string;
    const rotated = await cli(['keys', 'rotate', ci, '--db', db, '--grace', '60']);
    expect([rotated.code, rotated.stdout.trim()]).toEqual([0, expect.stringMatching(/^mv_sk_/)]);
    expect((await cli(['keys', 'revoke', ci, '--db', db])).code).toBe(0);

    const granted = await cli(['credits', 'grant', '250', '--db', db, '--note', 'top-up']);
    expect(granted.stdout).toMatch(/available 1250/);
    expect((await cli(['credits', 'grant', '-5', '--db', db])).code).toBe(2);

    const added = await cli([
      'filters',
      'add',
      'Spam.Example',
      '--type',
      'domain',
      '--action',
      'block',
      '--db',
      db,
    ]);
    expect(added.code).toBe(0);
    const filter = JSON.parse(added.stdout) as { id: string; value: string };
    expect(filter.value).toBe('spam.example');
    const duplicate = await cli([
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
    expect(duplicate.code).toBe(2);
    expect(duplicate.stderr).toMatch(/^mailverdict: /);
    const page = await cli(['filters', 'list', '--db', db, '--json']);
    expect(JSON.parse(page.stdout)).toMatchObject({ total: 1, filters: [{ id: filter.id }] });
    expect((await cli(['filters', 'rm', filter.id, '--db', db])).code).toBe(0);
    expect((await cli(['filters', 'rm', filter.id, '--db', db])).code).toBe(2);

    // The key the first start printed works over HTTP: the account object.
    expect((await serveOnce(db, first.key)).account).toMatchObject({
      credits: { available: 1250 },
    });
  });

  it("serve without --base-url: a job's webhook and its status give one download_url, on the listening address, and it fetches the results", async () => {
    const receiver = await startWebhookReceiver();
    const serve = startCli([
      'serve',
      '--db',
      join(dir, 'webhooks.db'),
      '--port',
      '0',
      '--offline',
      '--allow-private-networks',
    ]);
    try {
      const [, url] = (await serve.waitFor(/Listening on (http:\/\/\S+) /)) as [string, string];
      const [, key] = (await serve.waitFor(/^(mv_sk_\S+)$/m)) as [string, string];
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const callback = receiver.url;
      const submitted = await fetch(`${url}/v1/verify`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          emails: ['a@example.org', 'risky@example.com'],
          callback_url: callback,
        }),
      });
      expect(submitted.status).toBe(202);
      const { id } = (await submitted.json()) as { id: string };
      for (let i = 0; i < 200 && receiver.hits.length === 0; i++) await pause(50);
      const event = JSON.parse(receiver.hits[0]?.body ?? '{}') as { download_url?: string };
      const status = (await (await fetch(`${url}/v1/verify/${id}`, { headers })).json()) as {
        download_url?: string;
      };
      // The port included (issue 23: it was http://localhost/ without it).
      expect(event.download_url).toBe(`${url}/v1/verify/${id}/results`);
      expect(status.download_url).toBe(event.download_url);
      const results = await fetch(event.download_url as string, { headers });
      expect(results.status).toBe(200);
      const body = (await results.json()) as { results: { email: string }[] };
      expect(body.results.map((r) => r.email)).toEqual(['a@example.org', 'risky@example.com']);
      expect(await serve.stop()).toBe(0);
    } finally {
      await serve.stop('SIGKILL');
      await receiver.close();
    }
  });

  it.each(['0.0.0.0', '::'])(
    'serve --host %s without --base-url says which URL it needs, and exits 2',
    async (host) => {
      const run = await cli(['serve', '--db', join(dir, 'wild.db'), '--host', host, '--offline']);
      expect(run.code).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/give --base-url/);
      expect(existsSync(join(dir, 'wild.db'))).toBe(false);
    },
  );

  it('admin commands on a file without an account say what to do', async () => {
    const run = await cli(['keys', 'list', '--db', join(dir, 'empty.db')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/has no account yet: start `mailverdict serve` once/);
    // ...and did not create the file it was pointed at.
    expect(existsSync(join(dir, 'empty.db'))).toBe(false);
  });
});

describe('batch stopped in mid-run, then --resume (spawned)', () => {
  let slow: TestDnsServer;
  beforeAll(async () => {
    slow = await startSlowDns(DOMAINS, 150);
  });
  afterAll(async () => {
    await slow.close();
  });

  for (const output of ['ndjson', 'csv'] as const) {
    it(`${output}: SIGINT writes everything verified and prints the --resume command, which completes the file with each index once`, async () => {
      const file = join(dir, `stopped.${output}`);
      const args = [
        ...['batch', '-', '-o', output, '--method', 'quick', '--concurrency', '5'],
        ...['--dns-server', slow.address, '--dns-timeout', '60000', '--no-dns-canary'],
      ];
      const stdin = LIST.join('\n');
      const first = await runCliToFile(args, file, { stdin, lines: 400, signal: 'SIGINT' });
      expect(first.sent).toBe(true);
      expect(first.code, first.stderr).toBe(130);
      const stopped = recordsIn(file, output).map((r) => r.index);
      expect(new Set(stopped).size).toBe(stopped.length);
      // Records finish in domain order, not input order: the stop leaves gaps below the last
      // index written (the 1,830 records up to line 2,653), and the index says which.
      const highest = Math.max(...stopped);
      expect(stopped.length).toBeLessThan(ADDRESS_INDEXES.filter((i) => i <= highest).length);
      expect(stopped.length).toBeLessThan(ADDRESS_INDEXES.length);

      const typed = /^To go on: (.*) \(with the same list on standard input\)$/m.exec(first.stderr);
      expect(typed?.[1]).toBe(`mailverdict ${args.join(' ')} --resume ${file}`);
      const second = await runTyped(typed?.[1] as string, stdin);
      expect(second.code, second.stderr).toBe(0);
      expect(second.stdout).toBe('');
      expect(second.stderr).toContain(
        `now has a record of each of the ${ADDRESS_INDEXES.length} addresses of standard input`,
      );

      const records = recordsIn(file, output);
      expect(records.map((r) => r.index).sort((a, b) => a - b)).toEqual(ADDRESS_INDEXES);
      for (const record of records) {
        expect(record.input).toBe(LIST[record.index - 1]);
        expect(record.duplicate, `index ${record.index}`).toBe(REPEATS.has(record.index));
      }
      // Two runs of a few seconds each, and two process starts: more than the default timeout
      // on a busy machine.
    }, 120_000);
  }
});

/** Slow domains of the resume test: enough that its run lasts a few seconds. */
const DOMAINS = 600;
/**
 * 3,000 lines: addresses over the slow domains in scattered order, every 50th line blank, and
 * every 97th a repeat (another case) of the line before it.
 */
const LIST = Array.from({ length: 3_000 }, (_, i) => {
  const line = i + 1;
  if (line % 50 === 0) return '';
  const address = (n: number) => `user${n}@slow${(n * 37) % DOMAINS}.com`;
  return line % 97 === 0 ? address(line - 1).toUpperCase() : address(line);
});
const ADDRESS_INDEXES = LIST.flatMap((address, i) => (address === '' ? [] : [i + 1]));
/** Indexes whose address repeats an earlier one, compared without case. */
const REPEATS = new Set(
  ADDRESS_INDEXES.filter((index) =>
    LIST.slice(0, index - 1).some(
      (earlier) => earlier !== '' && earlier.toLowerCase() === LIST[index - 1]?.toLowerCase(),
    ),
  ),
);

/** The records of a batch output file, NDJSON or CSV. */
function recordsIn(
  file: string,
  format: 'ndjson' | 'csv',
): { index: number; input: string; duplicate: boolean }[] {
  const text = readFileSync(file, 'utf8');
  if (format === 'ndjson') {
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const record = JSON.parse(line) as { index: number; input: string; duplicate?: true };
        return { index: record.index, input: record.input, duplicate: record.duplicate === true };
      });
  }
  const rows = parseCsv(text, { columns: true }) as Record<string, string>[];
  return rows.map((row) => ({
    index: Number(row.index),
    input: row.input as string,
    duplicate: row.duplicate === 'true',
  }));
}

/**
 * Starts `mailverdict serve` on a free port, reads the key it prints (if any), asks for the
 * account with it (or with `key`), and stops it with SIGTERM.
 */
async function serveOnce(db: string, key?: string, printsKey = key === undefined) {
  let resolveUrl: (url: string) => void = () => {};
  const listening = new Promise<string>((resolve) => (resolveUrl = resolve));
  const child = spawn(
    process.execPath,
    [...CLI_NODE_ARGS, 'serve', '--db', db, '--port', '0', '--offline'],
    {
      cwd: CLI_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  let resolveLine: () => void = () => {};
  // stdout and stderr are separate pipes, read in no promised order: wait for the key's line.
  const keyLine = new Promise<void>((resolve) => (resolveLine = resolve));
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.includes('\n')) resolveLine();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    const url = /Listening on (http:\/\/\S+) /.exec(stderr)?.[1];
    if (url !== undefined) resolveUrl(url);
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const url = await Promise.race([listening, exited.then(() => Promise.reject(new Error(stderr)))]);
  if (printsKey) await keyLine;
  const printed = stdout.trim() === '' ? undefined : stdout.trim();
  const secret = key ?? printed;
  const response = await fetch(`${url}/v1/account`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  const account = (await response.json()) as unknown;
  child.kill('SIGTERM');
  expect(await exited).toBe(0);
  return { key: printed, account, stderr };
}
