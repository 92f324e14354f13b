import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';

/** The CLI as a user runs it: a separate process, real pipes, real signals. */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'src/cli/bin.ts');

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function cli(
  args: string[],
  options: {
    stdin?: string;
    whenOutput?: (stdout: string, child: ReturnType<typeof spawn>) => void;
  } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
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
    child.stdin.end(options.stdin ?? '');
  });
}

let dns: TestDnsServer;
let dir: string;
beforeAll(async () => {
  const zone: Parameters<typeof startDnsServer>[0] = {};
  for (let d = 0; d < 100; d++) {
    zone[`fast${d}.com`] = { mx: [{ exchange: `mx.fast${d}.com`, preference: 10 }] };
  }
  // Every other name is never answered: those verifications wait until interrupted.
  dns = await startDnsServer(zone, { silent: true });
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
    const lines = [
      ...Array.from({ length: 100 }, (_, i) => `user${i}@fast${i}.com`),
      ...Array.from({ length: 400 }, (_, i) => `user${i}@silent${i}.com`),
    ];
    let sent = false;
    const run = await cli(
      [
        'batch',
        '-',
        '--method',
        'quick',
        '--dns-server',
        dns.address,
        '--dns-timeout',
        '60000',
        '--no-dns-canary',
      ],
      {
        stdin: lines.join('\n'),
        whenOutput: (stdout, child) => {
          if (!sent && stdout.split('\n').length > 100) {
            sent = true;
            child.kill('SIGINT');
          }
        },
      },
    );
    expect(sent).toBe(true);
    expect(run.code).toBe(130);
    const records = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { input: string });
    expect(records.slice(0, 100).map((r) => r.input)).toEqual(lines.slice(0, 100));
    expect(run.stderr).toMatch(/Interrupted: 100 of 500 addresses read were verified and written/);
  });
});
