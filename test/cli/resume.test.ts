import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { beforeAll, describe, expect, it } from 'vitest';
import { csvFormat, NDJSON } from '../../src/cli/records.js';
import { appendTo, readEarlierOutput } from '../../src/cli/resume.js';
import { resumeCommand } from '../../src/cli/commands/batch.js';
import { runInProcess as run } from '../helpers/cli.js';

/**
 * `batch --resume <output>`: the records an earlier run wrote are kept, the ones it lacks are
 * appended, so that the file ends with each address of the list exactly once; a file that is
 * not that run's output is refused in one line and left as it was. In-process and offline:
 * the signal that stops a run in its middle is the spawned test's (cli-spawn.test.ts).
 */

/**
 * A list with a blank line, a repeat, an invalid address, a formula, and last a quoted local
 * part with a comma (a quoted CSV cell, so that a cut can fall inside the quotes).
 */
const LIST = [
  'ann@example.org',
  'bob@example.org',
  '',
  'Ann@EXAMPLE.org',
  'a..b@example.org',
  '=cmd@example.org',
  'carl@example.org',
  '"dora,x"@example.org',
];
const INDEXES = [1, 2, 4, 5, 6, 7, 8];

let dir: string;
let list: string;
/** A whole run's output, each format: the reference a resumed file must end up equal to. */
const whole: Record<'ndjson' | 'csv', string> = { ndjson: '', csv: '' };
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mailverdict-resume-'));
  list = join(dir, 'list.txt');
  writeFileSync(list, LIST.join('\n'));
  for (const format of ['ndjson', 'csv'] as const) {
    const done = await run(['batch', '--offline', '-o', format, list]);
    expect(done.code).toBe(0);
    whole[format] = `${done.out.join('\n')}\n`;
  }
});

let files = 0;
/** A new file holding `text`. */
function fileWith(text: string, name = `out-${++files}`): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

interface Row {
  index: number;
  input: string;
  duplicate: boolean;
  state: string;
}

function rowsOf(text: string, format: 'ndjson' | 'csv'): Row[] {
  if (format === 'ndjson') {
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const r = JSON.parse(line) as Row & { duplicate?: true };
        return { index: r.index, input: r.input, duplicate: r.duplicate === true, state: r.state };
      });
  }
  return (parseCsv(text, { columns: true }) as Record<string, string>[]).map((r) => ({
    index: Number(r.index),
    input: r.input as string,
    duplicate: r.duplicate === 'true',
    state: r.state as string,
  }));
}

/** The file holds each index of the list once, with its input, and the whole run's verdicts. */
function expectEachOnce(path: string, format: 'ndjson' | 'csv'): void {
  const rows = rowsOf(readFileSync(path, 'utf8'), format);
  expect(rows.map((r) => r.index).sort((a, b) => a - b)).toEqual(INDEXES);
  const reference = new Map(rowsOf(whole[format], format).map((r) => [r.index, r]));
  for (const row of rows) expect(row).toEqual(reference.get(row.index));
}

/** Exit 2 and one line on stderr, in our name, without a stack; the file left as it was. */
async function expectRefused(args: string[], path: string, pattern: RegExp): Promise<void> {
  const before = readFileSync(path);
  const { code, out, err } = await run(args);
  expect(code, err).toBe(2);
  expect(out).toEqual([]);
  expect(err.trimEnd().split('\n'), err).toHaveLength(1);
  expect(err).toMatch(/^mailverdict: /);
  expect(err).toMatch(pattern);
  expect(err).not.toContain('    at ');
  expect(readFileSync(path).equals(before)).toBe(true);
}

const resume = (path: string, format: 'ndjson' | 'csv', source = list) => [
  'batch',
  '--offline',
  '-o',
  format,
  source,
  '--resume',
  path,
];

/** The whole output's lines of records (the CSV header left out). */
function recordLines(format: 'ndjson' | 'csv'): string[] {
  const lines = whole[format].split('\n').filter(Boolean);
  return format === 'csv' ? lines.slice(1) : lines;
}
const headerOf = (format: 'ndjson' | 'csv') =>
  format === 'csv' ? `${whole.csv.split('\n')[0]}\n` : '';

describe.each(['ndjson', 'csv'] as const)('batch --resume, %s', (format) => {
  it('appends the records the file lacks, keeps the ones it has, and writes nothing to stdout', async () => {
    const lines = recordLines(format);
    // Indexes 1, 5 and 8 done: the repeat at 4 is missing, its first occurrence is not.
    const kept = [lines[0], lines[3], lines[6]].join('\n');
    const path = fileWith(`${headerOf(format)}${kept}\n`);
    const { code, out, err } = await run(resume(path, format));
    expect(code, err).toBe(0);
    expect(out).toEqual([]);
    expect(err).toMatch(/^Verified 4 addresses/m);
    expect(err).toContain(`now has a record of each of the 7 addresses of ${JSON.stringify(list)}`);
    const text = readFileSync(path, 'utf8');
    expect(text.startsWith(`${headerOf(format)}${kept}\n`)).toBe(true);
    expectEachOnce(path, format);
    // Marked over the whole list, as the first run would have: 4 repeats 1, which the file had.
    expect(rowsOf(text, format).find((r) => r.index === 4)?.duplicate).toBe(true);
  });

  it('a complete file gets nothing: it stays byte for byte as it was', async () => {
    const path = fileWith(whole[format]);
    const { code, err } = await run(resume(path, format));
    expect(code, err).toBe(0);
    expect(err).toMatch(/^Verified 0 addresses/m);
    expect(readFileSync(path, 'utf8')).toBe(whole[format]);
  });

  it('an empty file (a run stopped before its first record) gets every record, a CSV its header', async () => {
    const path = fileWith('');
    expect((await run(resume(path, format))).code).toBe(0);
    if (format === 'csv') expect(readFileSync(path, 'utf8').startsWith(headerOf('csv'))).toBe(true);
    expectEachOnce(path, format);
  });

  it('a last record cut off anywhere in mid-write is cut away and verified again: none lost, none doubled', async () => {
    const text = whole[format];
    // Every few bytes through records 7 and 8 (8's CSV cells are quoted), and before the last newline.
    const lastStart = text.lastIndexOf('\n', text.length - 2) + 1;
    const previousStart = text.lastIndexOf('\n', lastStart - 2) + 1;
    const cuts = [];
    for (let cut = previousStart + 1; cut < text.length; cut += 3) cuts.push(cut);
    cuts.push(text.length - 1);
    for (const cut of cuts) {
      const path = fileWith(text.slice(0, cut));
      const { code, err } = await run(resume(path, format));
      expect(code, `cut at ${cut}: ${err}`).toBe(0);
      if (cut !== lastStart && cut !== previousStart) {
        expect(err, `cut at ${cut}`).toMatch(/ended in a record cut off in mid-write/);
      }
      expectEachOnce(path, format);
    }
  });

  it('cuts the half-written record away before anything is appended', async () => {
    const text = whole[format];
    const path = fileWith(text.slice(0, text.length - 10));
    const recordFormat = format === 'csv' ? csvFormat() : NDJSON;
    const earlier = await readEarlierOutput(path, recordFormat);
    expect(earlier.halfWritten).toBe(true);
    const sink = await appendTo(earlier, recordFormat);
    await sink.close();
    expect(readFileSync(path, 'utf8')).toBe(
      text.slice(0, text.lastIndexOf('\n', text.length - 2) + 1),
    );
  });

  it("refuses another list's output in one line and leaves it as it was", async () => {
    const other = fileWith(['zed@example.org', 'bob@example.org'].join('\n'), 'other.txt');
    const path = fileWith(whole[format]);
    await expectRefused(resume(path, format, other), path, /is not the output of this list/);
    // Same first lines, but the file has records past the list's end.
    const shorter = fileWith(LIST.slice(0, 4).join('\n'), 'shorter.txt');
    await expectRefused(resume(path, format, shorter), path, /has a record 5, and line 5 of/);
    // A record where the list has a blank line.
    const blank = fileWith(['ann@example.org', 'bob@example.org', '', ''].join('\n'), 'gap.txt');
    const lines = recordLines(format);
    const early = fileWith(`${headerOf(format)}${lines[0]}\n${lines[2]}\n`);
    await expectRefused(resume(early, format, blank), early, /has a record 4, and line 4/);
  });

  it('refuses a file in the other format than -o says, with the flag that fits', async () => {
    const other = format === 'csv' ? 'ndjson' : 'csv';
    const path = fileWith(whole[other]);
    await expectRefused(
      resume(path, format),
      path,
      new RegExp(
        `holds ${other.toUpperCase()} records, and -o says ${format}: resume it with -o ${other}`,
      ),
    );
  });

  it('refuses foreign lines: text, a record of something else, two records of one index', async () => {
    const lines = recordLines(format);
    const head = headerOf(format);
    const foreign = [
      `${head}${lines[0]}\nsome notes\n${lines[1]}\n`,
      `${head}${lines[0]}\n${format === 'csv' ? '1,2,3' : '{"email":"x@y.org","state":"risky"}'}\n`,
      // A tail that is no record of ours, cut off or not.
      `${head}${lines[0]}\n# end`,
    ];
    for (const text of foreign) {
      const path = fileWith(text);
      await expectRefused(
        resume(path, format),
        path,
        /line \d+ is not a record of mailverdict batch/,
      );
    }
    const twice = fileWith(`${head}${lines[0]}\n${lines[1]}\n${lines[0]}\n`);
    await expectRefused(resume(twice, format), twice, /has two records for index 1/);
  });
});

describe('batch --resume: what is not a file to resume', () => {
  it('refuses a missing file, a directory, and a file that is neither format', async () => {
    const missing = join(dir, 'missing.ndjson');
    const gone = await run(resume(missing, 'ndjson'));
    expect(gone.code).toBe(2);
    expect(gone.err).toMatch(/cannot read .*missing\.ndjson.*: no such file/);
    const folder = join(dir, 'folder');
    mkdirSync(folder);
    expect((await run(resume(folder, 'ndjson'))).code).toBe(2);
    // An older CSV (no index column): its records cannot be matched to the list.
    const old = fileWith('input,email,state\nann@example.org,ann@example.org,deliverable\n');
    await expectRefused(resume(old, 'csv'), old, /is not the output of mailverdict batch/);
  });

  it('resumes a CSV list by its rows: the header is row 1', async () => {
    const csv = fileWith('name,email\nAnn,ann@example.org\nBob,bob@example.org\n', 'list.csv');
    const done = await run(['batch', '--offline', csv]);
    const path = fileWith(`${done.out[1] as string}\n`);
    const { code, err } = await run(['batch', '--offline', csv, '--resume', path]);
    expect(code, err).toBe(0);
    expect(rowsOf(readFileSync(path, 'utf8'), 'ndjson').map((r) => [r.index, r.input])).toEqual([
      [3, 'bob@example.org'],
      [2, 'ann@example.org'],
    ]);
  });
});

describe('a CSV on standard input', () => {
  it('is read as CSV when its first line is a header, with a note saying so', async () => {
    const csv = 'name,Email\nAnn,ann@example.org\n\nBob,bob@example.org\n';
    const { code, out, err } = await run(['batch', '--offline', '-'], csv);
    expect(code).toBe(0);
    expect(out.map((line) => JSON.parse(line) as Row).map((r) => [r.index, r.input])).toEqual([
      [2, 'ann@example.org'],
      [4, 'bob@example.org'],
    ]);
    expect(err).toMatch(
      /^mailverdict: reading standard input as CSV: its first line, "name,Email", has 2 columns \(--csv says so\)$/m,
    );
  });

  it('a lone email header, a semicolon or tab separator, and a .txt file are CSV too', async () => {
    for (const [input, args] of [
      ['email\nann@example.org\n', ['-']],
      ['E-mail;Name\nann@example.org;Ann\n', ['-']],
      ['Name\tEmail Address\nAnn\tann@example.org\n', ['-']],
      [
        'Name,Email\nAnn,ann@example.org\n',
        [fileWith('Name,Email\nAnn,ann@example.org\n', 'x.txt')],
      ],
    ] as const) {
      const { code, out, err } = await run(['batch', '--offline', ...args], input);
      expect(code, input).toBe(0);
      expect(
        out.map((line) => (JSON.parse(line) as Row).input),
        input,
      ).toEqual(['ann@example.org']);
      expect(err, input).toMatch(/as CSV: its first line/);
    }
  });

  it('a header without an email column among several is refused in one line naming --column', async () => {
    const { code, out, err } = await run(['batch', '--offline', '-'], 'name,phone\nAnn,123\n');
    expect(code).toBe(2);
    expect(out).toEqual([]);
    expect(err).toMatch(
      /no email column in the CSV header \("name", "phone"\): name the column with --column/,
    );
  });

  it('a list of addresses stays a list: no note, every line verified', async () => {
    const { code, out, err } = await run(
      ['batch', '--offline', '-'],
      '\n"a,b"@example.org\nann@example.org\n',
    );
    expect(code).toBe(0);
    expect(out.map((line) => (JSON.parse(line) as Row).index)).toEqual([2, 3]);
    expect(err).not.toMatch(/as CSV/);
  });
});

describe('the --resume command a stopped run prints', () => {
  it('replays the arguments quoted for a shell, adds --resume, and never prints an API key', () => {
    expect(resumeCommand(['batch', 'my list.txt', '-o', 'csv'], 'out.csv')).toBe(
      "mailverdict batch 'my list.txt' -o csv --resume out.csv",
    );
    expect(resumeCommand(['batch', "it's.txt"], undefined)).toBe(
      "mailverdict batch 'it'\\''s.txt' --resume <output file>",
    );
    // A resumed run goes on with the same command.
    expect(resumeCommand(['batch', 'l.txt', '--resume', 'o.ndjson'], 'other')).toBe(
      'mailverdict batch l.txt --resume o.ndjson',
    );
    const remote = ['batch', 'l.txt', '--server', 'http://127.0.0.1:8080', '--api-key', 'mv_sk_x'];
    expect(resumeCommand(remote, 'o.ndjson')).toBe(
      'mailverdict batch l.txt --server http://127.0.0.1:8080 --api-key "$MAILVERDICT_API_KEY" --resume o.ndjson',
    );
    expect(resumeCommand(['batch', 'l.txt', '--api-key=mv_sk_x'], 'o')).not.toContain('mv_sk_x');
  });
});
