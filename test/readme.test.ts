import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/index.js';
import { createMemoryDns } from '../src/testing.js';

/**
 * What the README says a verdict looks like is what the engine answers: its examples run here
 * with a memory Dns holding the records the README assumes (gmail.com's real MX hosts).
 */
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README examples', () => {
  it("the library example: Jane.Doe@Gmail.com with gmail.com's real MX records", async () => {
    expect(README).toContain("engine.verify('Jane.Doe@Gmail.com', { method: 'standard' })");
    const engine = createEngine({
      dns: createMemoryDns({
        'gmail.com': ['gmail-smtp-in.l.google.com', 'alt1.gmail-smtp-in.l.google.com'],
      }),
    });
    const verdict = await engine.verify('Jane.Doe@Gmail.com', { method: 'standard' });
    expect(verdict).toMatchObject({
      email: 'Jane.Doe@gmail.com',
      state: 'deliverable',
      reason: 'accepted_email',
      score: 93,
      riskFactors: ['free'],
      mxRecord: 'gmail-smtp-in.l.google.com',
      smtpProvider: 'google',
      free: true,
      role: false,
      didYouMean: null,
    });
    expect(README).toMatch(
      /score: 93,\s+\/\/\s+riskFactors: \['free'\], mxRecord: 'gmail-smtp-in\.l\.google\.com'/,
    );
  });

  it('the testing example: an injected DNS failure is reached, and answered as a timeout', async () => {
    const dns = createMemoryDns({
      'example.org': ['mx1.example.org', 'mx2.example.org'],
      'down.example.org': { kind: 'failure', code: 'timeout' },
    });
    const engine = createEngine({ dns });
    expect((await engine.verify('ann@example.org')).state).toBe('deliverable');
    expect((await engine.verify('ann@down.example.org')).reason).toBe('timeout');
    expect(dns.queries).toEqual(['example.org', 'down.example.org']);
    expect(README).toContain("(await engine.verify('ann@down.example.org')).reason; // 'timeout'");
  });

  it('the quick start table is what the CLI prints', async () => {
    const { main } = await import('../src/cli/main.js');
    const { PassThrough, Readable } = await import('node:stream');
    const stdout = new PassThrough();
    let printed = '';
    stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    await main(
      ['verify', '--offline', 'alice@example.org', 'info@mailinator.com', 'bad..dots@example.com'],
      {
        stdout,
        stderr: new PassThrough(),
        stdin: Readable.from([]),
        onInterrupt: () => () => {},
      },
    );
    for (const line of printed.trim().split('\n')) expect(README).toContain(line);
  });
});
