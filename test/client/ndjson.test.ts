import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ndjsonObjects } from '../../src/client/ndjson.js';
import { fcParams } from '../helpers/fast-check.js';

async function* pieces(bytes: Uint8Array, cuts: readonly number[]): AsyncGenerator<Uint8Array> {
  let start = 0;
  for (const cut of [...new Set(cuts)].sort((a, b) => a - b)) {
    if (cut <= start || cut >= bytes.length) continue;
    yield bytes.subarray(start, cut);
    start = cut;
  }
  yield bytes.subarray(start);
}

async function all(chunks: AsyncIterable<Uint8Array>, max = 1 << 20) {
  const out: Record<string, unknown>[] = [];
  for await (const value of ndjsonObjects(chunks, max, 'test')) out.push(value);
  return out;
}

describe('NDJSON as it streams', () => {
  it('gives the same objects however the bytes are cut (mid-line, mid-character)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.dictionary(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' })), {
          maxLength: 20,
        }),
        fc.array(fc.nat(), { maxLength: 30 }),
        fc.boolean(),
        async (objects, cuts, crlf) => {
          const text = objects.map((o) => JSON.stringify(o) + (crlf ? '\r\n' : '\n')).join('');
          const bytes = new TextEncoder().encode(text);
          const scaled = cuts.map((cut) => (bytes.length === 0 ? 0 : cut % bytes.length));
          expect(await all(pieces(bytes, scaled))).toEqual(objects);
        },
      ),
      fcParams(),
    );
  });

  it('refuses a line past the bound before it is whole, and a cut last line', async () => {
    const long = new TextEncoder().encode(`{"a":"${'x'.repeat(5000)}"}\n`);
    await expect(all(pieces(long, [100, 200, 300]), 1000)).rejects.toMatchObject({
      code: 'invalid_response',
    });
    const cut = new TextEncoder().encode('{"a":1}\n{"b":');
    await expect(all(pieces(cut, []))).rejects.toMatchObject({ code: 'connection_failed' });
    const garbage = new TextEncoder().encode('{"a":1}\nhello\n');
    await expect(all(pieces(garbage, []))).rejects.toMatchObject({ code: 'invalid_response' });
    // A last record without its newline is still a record.
    expect(await all(pieces(new TextEncoder().encode('{"a":1}\n{"b":2}'), []))).toEqual([
      { a: 1 },
      { b: 2 },
    ]);
  });
});
