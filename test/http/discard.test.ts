import { once } from 'node:events';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { discardInSlices } from '../../src/http/discard.js';
import { nextSlice, SLICE_MS } from '../../src/slices.js';

/** A body of `count` chunks of 1 KiB, all received already. */
function received(count: number): Readable {
  const body = new Readable({ read: () => undefined });
  for (let i = 0; i < count; i++) body.push(Buffer.alloc(1024));
  body.push(null);
  return body;
}

/** How many chunks had been thrown away when the next turn of the event loop came. */
function atNextTurn(count: () => number): Promise<number> {
  return new Promise((resolve) => setImmediate(() => resolve(count())));
}

describe('discardInSlices: a body thrown away a slice a turn', () => {
  it('stops at its first chunk once the slice is spent, and reads the rest at its next turn', async () => {
    const body = received(10);
    const ended = once(body, 'end');
    let chunks = 0;
    let bytes = 0;
    await nextSlice();
    // This turn's slice, held past its length by other work.
    const started = performance.now();
    while (performance.now() - started <= SLICE_MS + 1);
    discardInSlices(body, (size) => {
      chunks++;
      bytes += size;
    });
    expect(await atNextTurn(() => chunks)).toBe(1);
    await ended;
    expect(chunks).toBe(10);
    expect(bytes).toBe(10 * 1024);
  });

  it('reads on while its slice lasts', async () => {
    const body = received(10);
    let chunks = 0;
    await nextSlice();
    discardInSlices(body, () => chunks++);
    expect(await atNextTurn(() => chunks)).toBe(10);
  });
});
