import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseAddress } from '../../src/address/parse.js';
import { MAX_INPUT_LENGTH } from '../../src/address/limits.js';
import { MAX_LINE_BYTES, readCsvColumn, readLines } from '../../src/cli/input.js';
import { resolveClientIp } from '../../src/http/client-ip.js';
import { canonicalIp, canonicalRange } from '../../src/service/ip-ranges.js';
import { classifyRcpt, classifySession } from '../../src/smtp/classify.js';
import { MAX_REPLY_BYTES, ReplyReader } from '../../src/smtp/reply.js';

/**
 * Work on hostile input grows linearly with its length, measured without a clock: every
 * string or regular-expression builtin the code calls is metered by how many UTF-16 units it
 * can read (the receiver and its arguments), so a parser that rescans its input (indexOf or a
 * regex in a loop, repeated concatenation read back) shows up as units that grow faster than
 * the input. Hard caps are checked the same way: input over a cap is refused having read
 * nothing, or a bounded amount, however long it is.
 */

type Method = (this: unknown, ...args: unknown[]) => unknown;

const METERED_STRING_METHODS = [
  'charAt',
  'charCodeAt',
  'codePointAt',
  'endsWith',
  'includes',
  'indexOf',
  'lastIndexOf',
  'normalize',
  'replace',
  'replaceAll',
  'slice',
  'split',
  'startsWith',
  'substring',
  'toLowerCase',
  'toUpperCase',
  'trim',
  'trimEnd',
  'trimStart',
] as const;

const nativeIndexOf = String.prototype.indexOf;
const nativeLastIndexOf = String.prototype.lastIndexOf;
const nativeSlice = String.prototype.slice;
const nativeSubstring = String.prototype.substring;

/**
 * Units a call reads, as the builtin does it: one for a single-character read, the part a
 * slice copies, the stretch a search scans up to its match, the whole receiver for the rest.
 */
function unitsOf(name: string, receiver: unknown, args: readonly unknown[]): number {
  const text = typeof receiver === 'string' ? receiver : '';
  const argLength = args.reduce<number>(
    (sum, arg) => sum + (typeof arg === 'string' ? arg.length : 0),
    0,
  );
  switch (name) {
    case 'charAt':
    case 'charCodeAt':
    case 'codePointAt':
      return 1;
    case 'slice':
    case 'substring': {
      const [start, end] = args as [number | undefined, number | undefined];
      const part =
        name === 'slice'
          ? nativeSlice.call(text, start, end)
          : nativeSubstring.call(text, start ?? 0, end);
      return part.length + 1;
    }
    case 'startsWith':
    case 'endsWith':
      return argLength + 1;
    case 'indexOf':
    case 'includes': {
      const needle = String(args[0]);
      const from = Math.max(0, Number(args[1] ?? 0) || 0);
      const found = nativeIndexOf.call(text, needle, from);
      return (found === -1 ? text.length : found + needle.length) - from + 1;
    }
    case 'lastIndexOf': {
      const needle = String(args[0]);
      const from = args[1] === undefined ? text.length : Number(args[1]);
      const found = nativeLastIndexOf.call(text, needle, from);
      return Math.min(text.length, from + needle.length) - (found === -1 ? 0 : found) + 1;
    }
    default:
      return text.length + argLength + 1;
  }
}

/**
 * Units a regular expression's exec reads: from where it starts (lastIndex for a global or
 * sticky one, else 0) to the end of its match, or to the end of the input without one. Every
 * regex builtin (test, match, replace, split) goes through exec once exec is replaced.
 */
function regexpUnits(regexp: RegExp, input: string, from: number, match: RegExpExecArray | null) {
  const start = regexp.global || regexp.sticky ? from : 0;
  if (match === null) return (regexp.sticky ? 1 : input.length - start) + 1;
  return match.index + match[0].length - start + 1;
}

/** Runs `fn` with the builtins metered; answers its result and the units read. */
function meter<T>(fn: () => T): { result: T; units: number } {
  let units = 0;
  const restore: Array<() => void> = [];
  for (const name of METERED_STRING_METHODS) {
    const original = String.prototype[name] as unknown as Method;
    (String.prototype as unknown as Record<string, Method>)[name] = function (
      this: unknown,
      ...args: unknown[]
    ) {
      units += unitsOf(name, this, args);
      return original.apply(this, args);
    };
    restore.push(() => {
      (String.prototype as unknown as Record<string, Method>)[name] = original;
    });
  }
  const exec = RegExp.prototype.exec;
  RegExp.prototype.exec = function (this: RegExp, input: string) {
    const from = this.lastIndex;
    const match = exec.call(this, input);
    units += regexpUnits(this, String(input), from, match);
    return match;
  };
  restore.push(() => {
    RegExp.prototype.exec = exec;
  });
  try {
    const result = fn();
    return { result, units };
  } finally {
    for (const undo of restore.reverse()) undo();
  }
}

/** Units per input unit: the slope of work against length, over lengths `sizes`. */
function slopes(build: (n: number) => string, run: (input: string) => unknown, sizes: number[]) {
  return sizes.map((n) => {
    const input = build(n);
    // Once unmetered first: lazily built tables (the Unicode data) are not the input's cost.
    run(input);
    const { units } = meter(() => run(input));
    return { n: input.length, units };
  });
}

/** Work at the largest size is at most `factor` times the smallest, scaled by length. */
function expectLinear(points: Array<{ n: number; units: number }>, factor = 2): void {
  const first = points[0]!;
  const last = points[points.length - 1]!;
  const perUnitFirst = (first.units + 1) / first.n;
  const perUnitLast = (last.units + 1) / last.n;
  expect(
    perUnitLast,
    `work per input unit grew from ${perUnitFirst.toFixed(1)} (n=${first.n}) to ${perUnitLast.toFixed(1)} (n=${last.n})`,
  ).toBeLessThanOrEqual(perUnitFirst * factor + 4);
}

const HOSTILE_ADDRESSES: Record<string, (n: number) => string> = {
  'dots in the local part': (n) => `${'a.'.repeat(n)}a@example.com`,
  'consecutive dots': (n) => `a${'.'.repeat(n)}a@example.com`,
  'at-signs': (n) => '@'.repeat(n),
  'quoted pairs': (n) => `"${'\\a'.repeat(n)}"@example.com`,
  'an unclosed quote': (n) => `"${'a'.repeat(n)}@example.com`,
  'quotes and at-signs': (n) => `"@"`.repeat(n),
  labels: (n) => `a@${'a.'.repeat(n)}com`,
  hyphens: (n) => `a@${'-'.repeat(n)}.com`,
  'a long punycode label': (n) => `a@xn--${'a'.repeat(n)}.com`,
  'non-ASCII labels': (n) => `a@${'ü.'.repeat(n)}de`,
  joiners: (n) => `a@a${'\u200d'.repeat(n)}.com`,
  'combining marks': (n) => `${'a\u0301'.repeat(n)}@example.com`,
  'IPv6 literal groups': (n) => `a@[IPv6:${'1:'.repeat(n)}1]`,
  'IPv4 literal parts': (n) => `a@[${'1.'.repeat(n)}1]`,
  brackets: (n) => `a@${'['.repeat(n)}`,
  'full-width at-signs': (n) => `${'a\uff20'.repeat(n)}b`,
  'angle brackets': (n) => `${'<'.repeat(n)}a@b.com${'>'.repeat(n)}`,
  backslashes: (n) => `${'\\'.repeat(n)}@example.com`,
};

describe('the address parser', () => {
  it.each(Object.entries(HOSTILE_ADDRESSES))(
    'reads a number of units linear in the input: %s',
    (_shape, build) => {
      for (const profile of ['default', 'rfc'] as const) {
        const points = slopes(
          (n) => build(n).slice(0, MAX_INPUT_LENGTH),
          (input) => parseAddress(input, { profile }),
          [16, 64, 256, 1024],
        );
        expectLinear(points);
      }
    },
  );

  it.each(Object.entries(HOSTILE_ADDRESSES))(
    'refuses %s over the input cap having read nothing',
    (_shape, build) => {
      let input = build(1);
      while (input.length <= 1_000_000) input += input;
      for (const profile of ['default', 'rfc'] as const) {
        const { result, units } = meter(() => parseAddress(input, { profile }));
        expect(result).toMatchObject({ ok: false, code: 'too_long' });
        expect(units).toBe(0);
      }
    },
  );

  it('caps input at no more than 1,024 UTF-16 units, above the 254 octets of an address', () => {
    expect(MAX_INPUT_LENGTH).toBeGreaterThanOrEqual(254);
    expect(MAX_INPUT_LENGTH).toBeLessThanOrEqual(1024);
    expect(parseAddress(`${'a'.repeat(MAX_INPUT_LENGTH)}@x.org`).ok).toBe(false);
  });
});

describe('the SMTP reply reader', () => {
  const replyOf = (lines: number) =>
    `${'250-a line of text\r\n'.repeat(lines)}250 last\r\n`.slice(0, 60_000);

  it('reads a reply dripped one byte at a time in linear work', () => {
    const points = slopes(
      (n) => replyOf(n),
      (text) => {
        const reader = new ReplyReader();
        let replies = 0;
        for (let i = 0; i < text.length; i++) replies += reader.feed(text[i]!).replies.length;
        return replies;
      },
      [50, 400, 2_800],
    );
    expectLinear(points);
  });

  it('reads many replies in one chunk in linear work', () => {
    const points = slopes(
      (n) => '250 ok\r\n'.repeat(n),
      (text) => new ReplyReader().feed(text).replies.length,
      [100, 1_000, 10_000],
    );
    expectLinear(points);
  });

  it('gives up on a line without end at the size cap, having buffered no more', () => {
    const reader = new ReplyReader(64 * 1024);
    const chunk = 'x'.repeat(16 * 1024);
    let fed = 0;
    let error: string | undefined;
    while (error === undefined && fed < 1_000) {
      error = reader.feed(chunk).error;
      fed++;
    }
    expect(error).toBe('reply_too_large');
    expect(fed).toBeLessThanOrEqual(5);
  });
});

describe('the SMTP reply classifier', () => {
  // Replies of up to 64 KiB built to make an echo scanner rescan: runs of '@', quotes that
  // never close, brackets that never close, domain runs, literals, and plain words.
  const HOSTILE_REPLIES: Record<string, (n: number) => string> = {
    'at-signs': (n) => '@'.repeat(n),
    'local parts and at-signs': (n) => 'a@'.repeat(n),
    'quotes and at-signs': (n) => '"@'.repeat(n),
    'escaped quotes and at-signs': (n) => '\\"@'.repeat(n),
    'an unclosed quote before an at-sign': (n) => `${'a"'.repeat(n)}@x`,
    'a long quoted local part': (n) => `"${'a '.repeat(n)}"@x`,
    'unclosed angle brackets': (n) => '<'.repeat(n),
    'an angle bracket never closed': (n) => `<${'a'.repeat(n)}`,
    'unclosed address literals': (n) => '@['.repeat(n),
    'address literals with dots': (n) => '@[1.'.repeat(n),
    'a long dot-atom': (n) => `${'a.'.repeat(n)}@${'b.'.repeat(n)}`,
    'the recipient domain over and over': (n) => 'ip-law.example.'.repeat(n),
    'the recipient literal over and over': (n) => '192.0.2.1.'.repeat(n),
    words: (n) => 'user unknown relay access denied '.repeat(n),
  };

  it.each(Object.entries(HOSTILE_REPLIES))(
    'reads a number of units linear in the reply: %s',
    (_shape, build) => {
      for (const recipient of ['relay@ip-law.example', 'a@[192.0.2.1]']) {
        const points = slopes(
          (n) => build(n).slice(0, MAX_REPLY_BYTES),
          (text) => {
            const reply = { code: 550, enhanced: '5.7.1', text, lines: [text] };
            const sent = { recipient, sender: 'verify@example.net' };
            return [classifyRcpt(reply, sent), classifySession(reply, sent)];
          },
          [256, 2_048, 16_384],
        );
        expectLinear(points);
      }
    },
  );
});

describe('X-Forwarded-For', () => {
  const trusted = ['10.0.0.0/8'];

  it('reads a bounded amount of a header however many hops it lists', () => {
    const header = (hops: number) =>
      Array.from({ length: hops }, (_, i) => `203.0.113.${i % 250}`).join(', ');
    const small = meter(() => resolveClientIp('10.0.0.1', header(40), trusted)).units;
    const huge = meter(() => resolveClientIp('10.0.0.1', header(40_000), trusted)).units;
    // Only the last hops are ever believed: reading a 40,000-hop header is no more work
    // than reading a 40-hop one, give or take the scan for where the last hops start.
    expect(huge).toBeLessThanOrEqual(small * 2 + 64);
  });

  it('gives the same answer as before for short headers', () => {
    expect(resolveClientIp('10.0.0.1', '198.51.100.7, 10.0.0.2', trusted)).toBe('198.51.100.7');
    expect(resolveClientIp('10.0.0.1', 'garbage, 10.0.0.2', trusted)).toBe('10.0.0.2');
    expect(resolveClientIp('192.0.2.1', '198.51.100.7', trusted)).toBe('192.0.2.1');
    expect(resolveClientIp('10.0.0.1', ' [2001:db8::1]:443 ', trusted)).toBe('2001:db8::1');
    expect(resolveClientIp('10.0.0.1', '198.51.100.7:8080,10.9.9.9', trusted)).toBe('198.51.100.7');
  });
});

describe('CLI input', () => {
  /** An endless source of `chunk`, counting how many chunks were taken from it. */
  function endless(chunk: Buffer): { stream: Readable; taken: () => number } {
    let taken = 0;
    const stream = Readable.from(
      (function* () {
        for (;;) {
          taken++;
          yield chunk;
        }
      })(),
      { objectMode: false, highWaterMark: chunk.length },
    );
    return { stream, taken: () => taken };
  }

  it('refuses a line without end at MAX_LINE_BYTES, never reading on', async () => {
    const { stream, taken } = endless(Buffer.alloc(4096, 0x61));
    const lines = readLines(stream);
    await expect(lines.next()).rejects.toThrow(/longer than/);
    expect(taken() * 4096).toBeLessThanOrEqual(MAX_LINE_BYTES + 4 * 4096);
    stream.destroy();
  });

  it('refuses a CSV field that never closes its quote at the record cap', async () => {
    const { stream, taken } = endless(Buffer.alloc(4096, 0x61));
    stream.unshift(Buffer.from('email\n"'));
    const records = readCsvColumn(stream, undefined);
    await expect(records.next()).rejects.toThrow();
    // csv-parse's max_record_size stops it; the pipe may have buffered a little more.
    expect(taken() * 4096).toBeLessThanOrEqual(MAX_LINE_BYTES + 64 * 4096);
    stream.destroy();
  });
});

describe('IP address text', () => {
  it.each([
    ['colon groups', (n: number) => `${'1:'.repeat(n)}x`],
    ['double colons', (n: number) => `${'1::'.repeat(n)}x`],
    ['hex run', (n: number) => `${'a'.repeat(n)}:x`],
    ['dotted run', (n: number) => `${'1.'.repeat(n)}x`],
    ['IPv4 tail', (n: number) => `::${'1:'.repeat(n)}1.2.3.4x`],
  ])('is refused having read a bounded amount, however long: %s', (_shape, build) => {
    const short = meter(() => canonicalIp(build(8))).units;
    const { result, units } = meter(() => canonicalIp(build(20_000)));
    expect(result).toBeUndefined();
    expect(units).toBeLessThanOrEqual(short + 64);
    expect(meter(() => canonicalRange(`${build(20_000)}/64`)).units).toBeLessThanOrEqual(
      short + 64,
    );
  });

  it('still reads the longest real address', () => {
    expect(canonicalIp('ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255')).toBe(
      'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
    );
    expect(canonicalIp('::ffff:192.0.2.1')).toBe('192.0.2.1');
  });
});
