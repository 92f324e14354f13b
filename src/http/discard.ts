import { nextSlice, SLICE_MS, sliceSpent } from '../slices.js';

/** What discardInSlices needs of a request body: a node Readable's flowing controls. */
export interface Discardable {
  on(event: 'data', listener: (chunk: Uint8Array) => void): unknown;
  pause(): unknown;
  resume(): unknown;
  readonly destroyed: boolean;
}

/**
 * Reads `body` to its end and throws it away, a slice at a time (src/slices.ts): once the
 * turn's slice is spent, it pauses and goes on at its next turn, after the requests and
 * timers that came meanwhile. Read as fast as it came, 8 clients sending 16 MB bodies
 * without a key at loopback speed had the server drop up to 16 MB a turn, 30-170 ms during
 * which no one else was answered (bench/availability.ts); paused, a socket is read no
 * further, and the sender waits on TCP's window instead. `onChunk` sees each chunk's size
 * (the caller's limit).
 */
export function discardInSlices(
  body: Discardable,
  onChunk: (bytes: number) => void,
  sliceMs = SLICE_MS,
): void {
  let waiting = false;
  body.on('data', (chunk) => {
    onChunk(chunk.byteLength);
    if (waiting || !sliceSpent(sliceMs)) return;
    waiting = true;
    body.pause();
    void nextSlice().then(() => {
      waiting = false;
      if (!body.destroyed) body.resume();
    });
  });
  body.resume();
}
