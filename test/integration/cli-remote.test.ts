import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ROOT, runCli, startServe, type ServeChild } from '../helpers/cli.js';

/**
 * The CLI as a client, spawned as a user runs it: `batch --server` against `mailverdict serve`
 * on a SQLite file writes the same records as `batch` verifying here, on a 20,000-address list
 * (offline on both sides: the verdicts of a list need no network to be compared).
 */
let dir: string;
let serve: ServeChild;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mailverdict-remote-'));
  serve = await startServe(join(dir, 'api.db'), ['--credits', '100000']);
}, 60_000);
afterAll(async () => {
  expect(await serve?.stop()).toBe(0);
  rmSync(dir, { recursive: true, force: true });
});

/** 20,000 lines: deliverable, disposable, role, free, typos, broken syntax, IDN, test addresses, repeats. */
function list(): string[] {
  const kinds = [
    (i: number) => `user${i}@example${i % 97}.org`,
    (i: number) => `someone${i}@mailinator.com`,
    (i: number) => `info${i % 50 === 0 ? '' : i}@company${i % 31}.com`,
    (i: number) => `person${i}@gmail.com`,
    (i: number) => `ann${i}@gmial.com`,
    (i: number) => `broken..${i}@example.org`,
    (i: number) => `jöhn${i}@bücher${i % 5}.de`,
    (i: number) =>
      ['deliverable@example.com', 'undeliverable@example.com', 'risky@example.com'][
        i % 3
      ] as string,
    (i: number) => `user${i % 40}@example${(i % 40) % 97}.org`,
    (i: number) => `no-at-sign-${i}`,
  ];
  return Array.from({ length: 20_000 }, (_, i) =>
    (kinds[i % kinds.length] as (i: number) => string)(i),
  );
}

describe('batch --server (spawned)', () => {
  it('20,000 addresses: the same records and summary as verifying here', async () => {
    const file = join(dir, 'list.txt');
    writeFileSync(file, `${list().join('\n')}\n`);
    const local = await runCli(['batch', '--offline', file]);
    // The server and key from the environment, as the README recommends for keys.
    const remote = await runCli(['batch', file], {
      env: { MAILVERDICT_SERVER: serve.url, MAILVERDICT_API_KEY: serve.key },
    });
    expect(local.code).toBe(0);
    expect(remote.code, remote.stderr).toBe(0);
    const lines = remote.stdout.trim().split('\n');
    expect(lines).toHaveLength(20_000);
    expect(remote.stdout).toBe(local.stdout);
    const summary = (text: string) => text.replace(/ in \d+\.\d s\./, '');
    expect(summary(remote.stderr)).toBe(summary(local.stderr));
    const records = lines.map((line) => JSON.parse(line) as { state: string; duplicate?: true });
    expect(new Set(records.map((r) => r.state))).toEqual(
      new Set(['deliverable', 'risky', 'undeliverable']),
    );
    expect(records.some((r) => r.duplicate === true)).toBe(true);
  }, 180_000);
});

describe('README: the CLI through a server', () => {
  it('runs as written, with the test server and its key', async () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const block = /### The CLI through a server[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBeDefined();
    const work = mkdtempSync(join(dir, 'readme-'));
    writeFileSync(join(work, 'list.txt'), 'ann@example.org\ninfo@mailinator.com\n');
    writeFileSync(join(work, 'list.csv'), 'name,email\nAnn,ann@example.org\n');
    const script = [
      'set -e',
      // tsx by its absolute URL: the script runs in another directory.
      `mailverdict() { "${process.execPath}" --import "${import.meta.resolve('tsx')}" "${join(CLI_ROOT, 'src/cli/bin.ts')}" "$@"; }`,
      (block as string)
        .replaceAll('http://127.0.0.1:8080', serve.url)
        .replace('mv_sk_...', serve.key),
    ].join('\n');
    const run = spawnSync('bash', ['-c', script], { cwd: work, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/info@mailinator\.com\s+risky/);
    expect(readFileSync(join(work, 'results.ndjson'), 'utf8').trim().split('\n')).toHaveLength(2);
    expect(readFileSync(join(work, 'results.csv'), 'utf8')).toMatch(/^index,input,email,state/);
  }, 120_000);
});
