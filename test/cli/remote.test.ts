import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo, StopSignal } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { inChunks, remoteResults } from '../../src/cli/remote.js';
import { createClient } from '../../src/client.js';
import { startLoopbackApi, type LoopbackApi } from '../client/helpers.js';
import { gatedDns } from '../helpers/fakes.js';
import { freePort } from '../helpers/ports.js';

/**
 * `verify` and `batch` with `--server`: through mailverdict/node on loopback (memory store,
 * offline engine), the same output, exit codes and summary as the same run verified here.
 */
let loopback: LoopbackApi;
let server: string[];
beforeAll(async () => {
  loopback = await startLoopbackApi();
  const { secret } = await loopback.key({ credits: 100_000 });
  server = ['--server', loopback.server.url, '--api-key', secret];
});
afterAll(async () => {
  await loopback.close();
});

interface Run {
  code: number;
  out: string;
  err: string;
}

/** The CLI in-process; `interrupt` gets the handler a Ctrl-C would call. */
async function run(
  args: string[],
  stdin = '',
  options: { stderrIsTty?: boolean; interrupt?: (send: (signal: StopSignal) => void) => void } = {},
): Promise<Run> {
  const stdout = new PassThrough();
  const stderr = Object.assign(new PassThrough(), {
    isTTY: options.stderrIsTty === true,
    columns: 80,
  });
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const io: CliIo = {
    stdout,
    stderr,
    stdin: Readable.from([Buffer.from(stdin)]),
    onInterrupt: (handler) => {
      options.interrupt?.(handler);
      return () => {};
    },
  };
  const code = await main(args, io);
  return { code, out, err };
}

const ADDRESSES = [
  'ann@example.org',
  'Info@Mailinator.com',
  'bad..dots@example.org',
  'ann@example.org',
  'undeliverable@example.com',
  'risky@example.com',
  'bob@gmial.com',
  'not an address',
  'bücher@bücher.de',
];

/** The summary's first line says how long the run took: the rest must be the same. */
const withoutTiming = (text: string) => text.replace(/ in \d+\.\d s\./, ' in _ s.');

describe('verify --server', () => {
  it('prints the same table, the same --json records and the same --strict exit codes', async () => {
    const local = await run(['verify', '--offline', ...ADDRESSES]);
    const remote = await run(['verify', ...server, ...ADDRESSES]);
    expect(remote).toEqual(local);
    expect(local.out).toMatch(/bad\.\.dots@example\.org\s+undeliverable/);

    const localJson = await run(['verify', '--offline', '--json', ...ADDRESSES]);
    const remoteJson = await run(['verify', '--json', ...server, ...ADDRESSES]);
    expect(remoteJson).toEqual(localJson);
    const records = localJson.out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as object);
    expect(records[3]).toMatchObject({ index: 4, input: 'ann@example.org', duplicate: true });

    for (const list of [['ann@example.org'], ['risky@example.com'], ADDRESSES]) {
      const strictLocal = await run(['verify', '--strict', '--offline', ...list]);
      const strictRemote = await run(['verify', '--strict', ...server, ...list]);
      expect(strictRemote.code).toBe(strictLocal.code);
    }
  });

  it('refuses flags that only make sense here, and a server without a key', async () => {
    const refusals: [string[], RegExp][] = [
      [['--server', loopback.server.url], /needs an API key: --api-key, or MAILVERDICT_API_KEY/],
      [['--api-key', 'mv_sk_x'], /--api-key is for --server/],
      [[...server, '--offline'], /--offline configures verification here/],
      [[...server, '--dns-server', '127.0.0.1'], /--dns-server configures/],
      [[...server, '--no-dns-canary'], /--no-dns-canary configures/],
      [['--server', 'ftp://x', '--api-key', 'k'], /--server: baseUrl must be http or https/],
    ];
    for (const [flags, message] of refusals) {
      const result = await run(['verify', ...flags, 'ann@example.org']);
      expect(result.code, flags.join(' ')).toBe(2);
      expect(result.err).toMatch(message);
      expect(result.err.trim().split('\n')).toHaveLength(1);
    }
  });

  it("the server's refusals exit 2, an unreachable server 4: one line each", async () => {
    const badKey = await run([
      'verify',
      '--server',
      loopback.server.url,
      '--api-key',
      'mv_sk_x',
      'a@example.org',
    ]);
    expect(badKey).toMatchObject({ code: 2, out: '' });
    expect(badKey.err).toMatch(/^mailverdict: the server refused \(401 unauthorized\): /);
    const { secret: broke } = await loopback.key({ credits: 0 });
    const poor = await run([
      'verify',
      '--server',
      loopback.server.url,
      '--api-key',
      broke,
      'a@example.org',
    ]);
    expect(poor.code).toBe(2);
    expect(poor.err).toMatch(/402 insufficient_credits/);
    const closed = await freePort();
    const down = await run([
      'verify',
      '--server',
      `http://127.0.0.1:${closed}`,
      '--api-key',
      'k',
      'a@example.org',
    ]);
    expect(down.code).toBe(4);
    expect(down.err).toMatch(/^mailverdict: the server: POST \/v1\/verify: the connection failed/);
    expect(down.err.trim().split('\n')).toHaveLength(1);
  }, 60_000);
});

describe('batch --server', () => {
  const list = [
    ...ADDRESSES,
    ...Array.from({ length: 200 }, (_, i) => `user${i}@domain${i % 13}.org`),
  ];

  it('writes the same NDJSON and CSV records, and the same summary', async () => {
    for (const output of ['ndjson', 'csv']) {
      const local = await run(['batch', '--offline', '-o', output, '-'], list.join('\n'));
      const remote = await run(['batch', '-o', output, ...server, '-'], list.join('\n'));
      expect(remote.code).toBe(0);
      expect(remote.out).toBe(local.out);
      expect(withoutTiming(remote.err)).toBe(withoutTiming(local.err));
    }
  });

  it('--resume through the server appends what the file lacks, as a local run would', async () => {
    for (const output of ['ndjson', 'csv'] as const) {
      const whole = await run(['batch', '--offline', '-o', output, '-'], list.join('\n'));
      const lines = whole.out.split('\n').filter(Boolean);
      const header = output === 'csv' ? [lines.shift() as string] : [];
      // Every third record kept: the rest are missing, a repeat among them.
      const kept = lines.filter((_, i) => i % 3 === 0);
      const file = join(mkdtempSync(join(tmpdir(), 'mailverdict-remote-')), `out.${output}`);
      writeFileSync(file, [...header, ...kept, ''].join('\n'));
      const resumed = await run(
        ['batch', '-o', output, ...server, '-', '--resume', file],
        list.join('\n'),
      );
      expect(resumed.code, resumed.err).toBe(0);
      expect(resumed.out).toBe('');
      const after = readFileSync(file, 'utf8').split('\n').filter(Boolean);
      expect(after.slice(0, header.length + kept.length)).toEqual([...header, ...kept]);
      // The same records as one whole local run, each once.
      expect([...after].sort()).toEqual([...header, ...lines].sort());
    }
  });

  it('an address the server will not take stops the run, naming its line', async () => {
    const remote = await run(
      ['batch', ...server, '-'],
      'ann@example.org\n\nbad\u0001x@example.org\n',
    );
    expect(remote.code).toBe(2);
    expect(remote.err).toBe(
      'mailverdict: line 3 of standard input: the server refuses this address: it contains a control character\n',
    );
    const csv = await run(
      ['batch', '--csv', ...server, '-'],
      `email\n${'x'.repeat(1100)}@example.org\n`,
    );
    expect(csv.err).toMatch(
      /^mailverdict: row 2 of standard input: the server refuses this address: it must be a string of 1 to 1024 characters/,
    );
  });

  it("shows the progress bar on a terminal, from the server's progress", async () => {
    const remote = await run(['batch', ...server, '-'], list.join('\n'), { stderrIsTty: true });
    expect(remote.code).toBe(0);
    expect(remote.err).toMatch(new RegExp(`${list.length} verified \\| \\d+/s`));
  });

  it('Ctrl-C while the server works: what is written stays, exit 130, the summary says so', async () => {
    const dns = gatedDns({ 'example.org': ['mx.example.org'] });
    const slow = await startLoopbackApi({ dns });
    try {
      const { secret } = await slow.key();
      let interrupt: ((signal: StopSignal) => void) | undefined;
      const running = run(
        ['batch', '--server', slow.server.url, '--api-key', secret, '-'],
        'a@example.org\nb@example.org\n',
        {
          interrupt: (send) => (interrupt = send),
        },
      );
      // Once the job exists, press Ctrl-C.
      for (let i = 0; i < 500 && (await slow.api.store.listJobs('processing')).length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      interrupt?.('SIGINT');
      const result = await running;
      expect(result.code).toBe(130);
      expect(result.out).toBe('');
      expect(result.err).toMatch(/Interrupted: 0 of 2 addresses read were verified and written/);
      // The way on, without the key given on the command line.
      expect(result.err).toContain(
        `To go on: mailverdict batch --server ${slow.server.url} --api-key "$MAILVERDICT_API_KEY" - --resume <output file>`,
      );
      expect(result.err).not.toContain(secret);
      dns.open();
    } finally {
      await slow.close();
    }
  });
});

describe('the remote run, in jobs', () => {
  it('sends a long list as several jobs and gives every record back in order, once', async () => {
    const { secret } = await loopback.key({ credits: 100_000 });
    const client = createClient({ baseUrl: loopback.server.url, apiKey: secret });
    const emails = Array.from({ length: 250 }, (_, i) => `user${i}@domain${i % 7}.org`);
    const progress: number[] = [];
    const results = [];
    for await (const result of remoteResults(client, emails, {
      method: 'quick',
      limits: { addresses: 60, bytes: 1 << 20 },
      onProgress: (processed) => progress.push(processed),
    })) {
      results.push(result);
    }
    expect(results.map((r) => r.position)).toEqual(emails.map((_, i) => i));
    expect(results.map((r) => r.input)).toEqual(emails);
    expect(results.map((r) => r.record.email)).toEqual(emails);
    expect(progress.at(-1)).toBe(250);
    expect([...progress].sort((a, b) => a - b)).toEqual(progress);
    const jobs = (await loopback.api.store.listJobs('completed')).filter(
      (job) => job.totalEmails <= 60,
    );
    expect(jobs.map((job) => job.totalEmails).slice(-5)).toEqual([60, 60, 60, 60, 10]);
  });

  it('cuts at 50,000 addresses, and by size before the server would refuse the body', async () => {
    const many = Array.from({ length: 120_001 }, (_, i) => `u${i}@x.org`);
    const sizes: number[] = [];
    for await (const chunk of inChunks(many)) sizes.push(chunk.length);
    expect(sizes).toEqual([50_000, 50_000, 20_001]);
    const long = Array.from({ length: 20_000 }, (_, i) => `${'a'.repeat(1000)}${i}@x.org`);
    const bytes: number[] = [];
    for await (const chunk of inChunks(long)) {
      bytes.push(Buffer.byteLength(JSON.stringify(chunk)));
    }
    expect(bytes.length).toBeGreaterThan(2);
    expect(Math.max(...bytes)).toBeLessThanOrEqual(8 * 1024 * 1024 + 2);
  });
});
