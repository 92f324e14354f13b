import { describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { repeatFinder } from '../../src/service/batch/repeats.js';
import { runInProcess } from '../helpers/cli.js';

const run = runInProcess;

describe('mailverdict CLI (in-process)', () => {
  it('verifies offline and prints a table; --strict exits by the worst verdict', async () => {
    const mixed = await run(['verify', '--offline', 'ann@example.org', 'bad..x@example.org']);
    expect(mixed.code).toBe(0);
    expect(mixed.out[0]).toMatch(/^ADDRESS\s+STATE\s+SCORE\s+REASON/);
    expect(mixed.out[1]).toMatch(/^ann@example\.org\s+deliverable/);
    expect(mixed.out[2]).toMatch(/undeliverable\s+0\s+invalid_email/);
    const strict = ['verify', '--strict', '--offline'];
    expect((await run([...strict, 'ann@example.org', 'bad..x@example.org'])).code).toBe(1);
    expect((await run([...strict, 'ann@example.org'])).code).toBe(0);
    expect((await run([...strict, 'ann@mailinator.com'])).code).toBe(3);
  });

  it('--json carries the input, the risk factors and the error', async () => {
    const { out } = await run([
      'verify',
      '--offline',
      '--json',
      'Info@Mailinator.com',
      'a..b@x.org',
    ]);
    const [disposable, broken] = out.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(disposable).toMatchObject({
      input: 'Info@Mailinator.com',
      state: 'risky',
      reason: 'low_quality',
      risk_factors: expect.arrayContaining(['disposable', 'role']) as unknown,
      error: null,
    });
    expect(broken).toMatchObject({
      input: 'a..b@x.org',
      state: 'undeliverable',
      error: { code: 'consecutive_dots' },
    });
  });

  it("never writes an address's control characters raw", async () => {
    const evil = 'a\u001b[2J\u009b31m\u202e@x.org';
    const table = await run(['verify', '--offline', evil]);
    const json = await run(['verify', '--offline', '--json', evil]);
    for (const text of [...table.out, ...json.out]) {
      // eslint-disable-next-line no-control-regex -- the characters that must not appear
      expect(text).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    }
    expect((JSON.parse(json.out[0] as string) as { input: string }).input).toBe(evil);
  });

  it('refuses bad usage with exit code 2 and one line on stderr', async () => {
    expect((await run([])).code).toBe(2);
    for (const args of [
      ['verify', '--method', 'deep', 'a@b.co'],
      ['verify', '--bogus', 'a@b.co'],
      ['verify'],
      ['verify', '--smtp-port', '99999', 'a@b.co'],
      ['verify', '--offline', '--method', 'smtp', 'a@b.co'],
      ['batch', '/no/such/file.txt'],
      ['batch', '-', '--output', 'xml'],
      ['verify', '--smtp-proxy', 'http://user:secret@proxy.example', 'a@b.co'],
      ['worker'],
      ['worker', '--redis', 'http://127.0.0.1:6379'],
      ['worker', '--redis', 'redis://127.0.0.1:1', '--jobs', '0'],
      ['serve', '--redis', 'not a url'],
      ['serve', '--work'],
      ['keys', 'list', '--redis', 'postgres://127.0.0.1/x'],
    ]) {
      const { code, err } = await run(args);
      expect(code, args.join(' ')).toBe(2);
      expect(err.trim(), args.join(' ')).not.toBe('');
      expect(err, args.join(' ')).not.toContain('    at ');
      expect(err, args.join(' ')).not.toContain('secret');
    }
  });

  it('an unreachable Redis is a failure (exit 4) that never prints its password', async () => {
    const { code, err } = await run([
      'keys',
      'list',
      '--redis',
      'redis://ops:secret@127.0.0.1:1/0?password=secret',
    ]);
    expect(code).toBe(4);
    expect(err).toMatch(/Redis is unreachable/);
    expect(err).not.toContain('secret');
    expect(err).not.toContain('    at ');
  });

  it('--version prints the package version', async () => {
    const { code, out } = await run(['--version']);
    expect(code).toBe(0);
    expect(out[0]).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('batch reads stdin, writes NDJSON in input order and a summary on stderr', async () => {
    const lines = [
      'ann@example.org',
      '',
      'bad..x@example.org',
      'info@mailinator.com',
      '  bob@example.org  ',
    ];
    const { code, out, err } = await run(['batch', '--offline', '-'], lines.join('\n'));
    expect(code).toBe(0);
    expect(out.map((line) => (JSON.parse(line) as { input: string }).input)).toEqual([
      'ann@example.org',
      'bad..x@example.org',
      'info@mailinator.com',
      'bob@example.org',
    ]);
    expect(err).toMatch(/Verified 4 addresses/);
    expect(err).toMatch(
      /By state: deliverable 2, (risky 1, undeliverable 1|undeliverable 1, risky 1)\./,
    );
  });

  it('batch writes CSV with a header, and reads a CSV column', async () => {
    const csv = 'name,Email\nAnn,ann@example.org\n"Doe, J",info@mailinator.com\n';
    const { code, out } = await run(
      ['batch', '--offline', '--csv', '--column', 'email', '-o', 'csv', '-'],
      csv,
    );
    expect(code).toBe(0);
    expect(out[0]).toMatch(
      /^index,input,email,state,reason,score,risk_factors,error,.*,duplicate$/,
    );
    // The index is the row a spreadsheet shows: the header is row 1.
    expect(out[1]).toMatch(
      /^2,ann@example\.org,ann@example\.org,deliverable,accepted_email,.*,false$/,
    );
    expect(out[2]).toMatch(/^3,info@mailinator\.com,.*,risky,low_quality,\d+,disposable;role,/);
  });

  it('batch refuses binary garbage and a 1 MB line with one line on stderr', async () => {
    const garbage = await run(['batch', '--offline', '-'], 'ann@example.org\n\u0000\u0001\u0002\n');
    expect(garbage.code).toBe(2);
    expect(garbage.err).toMatch(/line 2: a NUL byte/);
    const long = await run(['batch', '--offline', '-'], `${'a'.repeat(1024 * 1024)}@x.org\n`);
    expect(long.code).toBe(2);
    expect(long.err).toMatch(/line 1: longer than 65536 bytes/);
    const invalid = await run(['batch', '--offline', '-'], Buffer.from([0x61, 0xff, 0xfe, 0x0a]));
    expect(invalid.code).toBe(2);
  });
});

describe('CLI records: index and duplicate', () => {
  type Row = { index: number; input: string; email: string; duplicate?: boolean };
  const rows = (out: string[]) => out.map((line) => JSON.parse(line) as Row);

  it('batch: each record carries its input line (blank lines counted) and repeats are marked', async () => {
    const lines = [
      'Ann@Example.org',
      '',
      'bob@example.org',
      'ann@EXAMPLE.ORG',
      '   ',
      'not an address',
      'not an address',
      'ANN@example.org',
    ];
    const { code, out } = await run(['batch', '--offline', '-'], lines.join('\n'));
    expect(code).toBe(0);
    expect(rows(out).map((r) => [r.index, r.input, r.duplicate])).toEqual([
      [1, 'Ann@Example.org', undefined],
      [3, 'bob@example.org', undefined],
      // The API's rule: the local part compared without case, the domain as A-labels.
      [4, 'ann@EXAMPLE.ORG', true],
      [6, 'not an address', undefined],
      [7, 'not an address', true],
      [8, 'ANN@example.org', true],
    ]);
  });

  it('the same rule as a batch job: the positions the service marks are the ones the CLI marks', async () => {
    const lines = ['a@x.org', 'A@X.ORG', 'a@xn--bcher-kva.example', 'a@bücher.example', 'b@x.org'];
    const { out } = await run(['batch', '--offline', '-'], lines.join('\n'));
    const earlierOf = repeatFinder();
    const engine = createEngine({ offline: true });
    const expected = lines.map(
      (email, position) => earlierOf(email, engine.parse(email), position) !== undefined,
    );
    expect(expected).toEqual([false, true, false, true, false]);
    expect(rows(out).map((r) => r.duplicate === true)).toEqual(expected);
  });

  it('batch CSV: the index is the row a spreadsheet shows (the header is row 1, blank rows count)', async () => {
    const csv = 'name,email\nAnn,ann@example.org\n\n"Doe,\nJ",a@x.org\nBob,A@x.org\n';
    const ndjson = await run(['batch', '--offline', '--csv', '-'], csv);
    expect(rows(ndjson.out).map((r) => [r.index, r.input, r.duplicate])).toEqual([
      [2, 'ann@example.org', undefined],
      // Row 4 spans two lines of the file: one row of a spreadsheet.
      [4, 'a@x.org', undefined],
      [5, 'A@x.org', true],
    ]);
    const table = await run(['batch', '--offline', '--csv', '-o', 'csv', '-'], csv);
    expect(table.out.slice(1).map((line) => [line.split(',')[0], line.split(',').at(-1)])).toEqual([
      ['2', 'false'],
      ['4', 'false'],
      ['5', 'true'],
    ]);
  });

  it('verify --json: the index is the argument position, and repeats are marked', async () => {
    const { out } = await run(['verify', '--offline', '--json', 'a@x.org', 'b@x.org', 'A@x.org']);
    expect(rows(out).map((r) => [r.index, r.input, r.duplicate])).toEqual([
      [1, 'a@x.org', undefined],
      [2, 'b@x.org', undefined],
      [3, 'A@x.org', true],
    ]);
  });
});
