import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseSamples, valueOf } from '../metrics/prometheus-text.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'src/cli/bin.ts');

/** `mailverdict serve` in a process of its own: asks `session` of it, then stops it. */
async function withServe(
  flags: string[],
  session: (url: string, key: string) => Promise<void>,
): Promise<void> {
  const db = join(mkdtempSync(join(tmpdir(), 'mailverdict-ops-')), 'service.db');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', BIN, 'serve', '--db', db, '--port', '0', '--offline', ...flags],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  let resolveUrl: (url: string) => void = () => {};
  const listening = new Promise<string>((resolve) => (resolveUrl = resolve));
  let resolveKey: (key: string) => void = () => {};
  // A fresh file's first start prints its key on stdout: wait for the whole line (stdout and
  // stderr are separate pipes, read in no promised order).
  const key = new Promise<string>((resolve) => (resolveKey = resolve));
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.includes('\n')) resolveKey(stdout.trim());
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    const url = /Listening on (http:\/\/\S+) /.exec(stderr)?.[1];
    if (url !== undefined) resolveUrl(url);
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  try {
    const url = await Promise.race([
      listening,
      exited.then(() => Promise.reject(new Error(stderr))),
    ]);
    await session(url, await key);
  } finally {
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }
}

describe('mailverdict serve: operations endpoints', () => {
  it('serves /health, /ready and /metrics by default, counting the verifications', async () => {
    await withServe([], async (url, key) => {
      expect(await (await fetch(`${url}/health`)).json()).toEqual({ status: 'ok' });
      const ready = await fetch(`${url}/ready`);
      expect(ready.status).toBe(200);
      const verify = await fetch(`${url}/v1/verify?email=ann@mailinator.com&method=quick`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(verify.status).toBe(200);
      const scraped = await fetch(`${url}/metrics`);
      expect(scraped.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      const text = await scraped.text();
      const samples = parseSamples(text);
      expect(valueOf(samples, 'mailverdict_verifications_total', { method: 'quick' })).toBe(1);
      expect(valueOf(samples, 'mailverdict_http_requests_total', { route: 'verify' })).toBe(1);
      expect(text).not.toContain(key);
      expect(text).not.toContain('mailinator');
    });
  });

  it('--no-metrics serves no /metrics, and /health still', async () => {
    await withServe(['--no-metrics'], async (url) => {
      expect((await fetch(`${url}/metrics`)).status).toBe(404);
      expect((await fetch(`${url}/health`)).status).toBe(200);
    });
  });
});
