import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';

async function run(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(
    args,
    (l) => out.push(l),
    (l) => err.push(l),
  );
  return { code, out, err };
}

describe('mailverdict CLI', () => {
  it('verifies offline and prints a table', async () => {
    const { code, out } = await run([
      'verify',
      '--offline',
      'ann@example.org',
      'bad..x@example.org',
    ]);
    expect(code).toBe(0);
    expect(out[0]).toMatch(/^ADDRESS\s+STATE\s+SCORE\s+REASON/);
    expect(out[1]).toMatch(/^ann@example\.org\s+deliverable/);
    expect(out[2]).toMatch(/undeliverable\s+0\s+invalid_email/);
  });

  it('prints the detailed shape as JSON lines', async () => {
    const { out } = await run([
      'verify',
      '--offline',
      '--json',
      '--method',
      'quick',
      'risky@example.com',
    ]);
    expect(JSON.parse(out[0] as string)).toMatchObject({
      email: 'risky@example.com',
      state: 'risky',
      reason: 'low_deliverability',
    });
  });

  it('refuses bad usage with exit code 2', async () => {
    expect((await run([])).code).toBe(2);
    expect((await run(['verify', '--method', 'deep', 'a@b.co'])).code).toBe(2);
    expect((await run(['verify', '--bogus', 'a@b.co'])).code).toBe(2);
  });
});
