import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createCachedDns } from '../../src/dns/cached-dns.js';
import { createEngine } from '../../src/compose/engine.js';
import { verifyEach, type VerifyOne } from '../../src/engine/verify-many.js';
import type { Verdict } from '../../src/engine/verdict.js';
import type { Dns, MxAnswer } from '../../src/ports/dns.js';
import { turnCounter } from '../helpers/turns.js';

const offline = createEngine({ offline: true });

function* addresses(count: number, domains: number, read?: { count: number }) {
  for (let i = 0; i < count; i++) {
    if (read !== undefined) read.count++;
    yield `user${i}@domain${i % domains}.com`;
  }
}

async function collect(iterable: AsyncIterable<{ index: number; verdict: Verdict }>) {
  const seen = new Map<number, Verdict>();
  for await (const { index, verdict } of iterable) {
    expect(seen.has(index), `index ${index} once`).toBe(false);
    seen.set(index, verdict);
  }
  return seen;
}

/** A stand-in for the engine that records what was started and answers when told. */
function controlledVerify() {
  const started: string[] = [];
  const pending: Array<() => void> = [];
  let aborted = 0;
  const verify: VerifyOne = (address, { signal }) => {
    started.push(address);
    return new Promise<Verdict>((resolve, reject) => {
      signal?.addEventListener('abort', () => {
        aborted++;
        reject(signal.reason as Error);
      });
      pending.push(() => resolve({ email: address } as Verdict));
    });
  };
  return { verify, started, pending, aborted: () => aborted };
}

describe('verifyMany', () => {
  it('yields every index of a 100,000-address generator exactly once, with the right verdict', async () => {
    const seen = await collect(offline.verifyMany(addresses(100_000, 700), { method: 'quick' }));
    expect(seen.size).toBe(100_000);
    expect(seen.get(4_321)?.email).toBe('user4321@domain121.com');
  });

  it('lets the event loop turn between slices of an offline run, whose results are all ready', async () => {
    const run = async (sliceMs: number) => {
      const counter = turnCounter();
      const seen = await collect(offline.verifyMany(addresses(2_000, 50), { sliceMs }));
      expect(seen.size).toBe(2_000);
      return counter.stop();
    };
    // A slice of 0 yields at every look at the clock: every 16 starts or results.
    expect(await run(0)).toBeGreaterThanOrEqual(2_000 / 16);
    // Never yielding, a `for await` over ready results is all microtasks: not one turn.
    expect(await run(Number.POSITIVE_INFINITY)).toBe(0);
  });

  it('takes async iterables', async () => {
    async function* slowly() {
      for (let i = 0; i < 300; i++) {
        if (i % 50 === 0) await new Promise((r) => setTimeout(r, 1));
        yield `a${i}@d${i % 7}.org`;
      }
    }
    const seen = await collect(offline.verifyMany(slowly()));
    expect(seen.size).toBe(300);
    expect(seen.get(299)?.email).toBe('a299@d5.org');
  });

  it('reads ahead only as far as the work needs: a slow consumer stops the reading', async () => {
    const read = { count: 0 };
    const iterator = offline.verifyMany(addresses(10_000_000, 1_000, read), {
      concurrency: 10,
      perDomain: 10,
    });
    for (let i = 0; i < 5; i++) await iterator.next();
    // A window of 1,024 addresses plus the slots: nowhere near ten million.
    expect(read.count).toBeLessThan(1_200);
    await iterator.return();
  });

  it('holds a slot until its result is consumed, and counts concurrency in domains', async () => {
    const { verify, started, pending } = controlledVerify();
    const iterator = verifyEach(addresses(1_000, 100), { concurrency: 4, perDomain: 3 }, verify);
    const first = iterator.next();
    await new Promise((r) => setTimeout(r, 0));
    // 4 domains of 10 addresses each, 3 at a time per domain.
    expect(started).toHaveLength(12);
    expect(new Set(started.map((a) => a.split('@')[1])).size).toBe(4);
    for (const resolve of pending.splice(0)) resolve();
    await first;
    await new Promise((r) => setTimeout(r, 0));
    // Eleven results wait unconsumed: their slots are still held, so only one more started.
    expect(started).toHaveLength(13);
    await iterator.return();
  });

  it('looks up the MX of many domains at once, not one domain at a time', async () => {
    let inFlight = 0;
    let most = 0;
    const dns: Dns = {
      mx: async () => {
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 2));
        inFlight--;
        return {
          kind: 'records',
          hosts: [{ exchange: 'mx.example.net', priority: 10 }],
        } as MxAnswer;
      },
    };
    // The engine's default Dns is cached, one query per domain however many addresses wait on it.
    const engine = createEngine({ dns: createCachedDns(dns) });
    const seen = await collect(
      engine.verifyMany(addresses(2_000, 200), { method: 'quick', concurrency: 25 }),
    );
    expect(seen.size).toBe(2_000);
    // 25 domains verifying, and four lookups ahead per slot: never one at a time, never all 200.
    expect(most).toBeGreaterThan(25);
    expect(most).toBeLessThanOrEqual(25 * 5);
  });

  it('refuses a count or slice it cannot run with, naming the option, before reading anything', () => {
    const read: string[] = [];
    function* source() {
      read.push('read');
      yield 'a@b.org';
    }
    for (const concurrency of [0, -1, 1.5, Number.NaN, Infinity, '2', null]) {
      expect(() => offline.verifyMany(source(), { concurrency } as never)).toThrow(
        new RangeError(
          `verifyMany concurrency must be a whole number from 1, got ${
            typeof concurrency === 'string' ? '"2"' : String(concurrency)
          }`,
        ),
      );
    }
    expect(() => offline.verifyMany(source(), { perDomain: 0 })).toThrow(/verifyMany perDomain/);
    for (const sliceMs of [-1, Number.NaN]) {
      expect(() => offline.verifyMany(source(), { sliceMs })).toThrow(
        /verifyMany sliceMs must be 0 or more milliseconds/,
      );
    }
    expect(read).toEqual([]);
  });

  it('a non-string item is a TypeError naming its index, after the results before it', async () => {
    const results: number[] = [];
    const run = async () => {
      for await (const { index } of offline.verifyMany([
        'a@b.org',
        'c@d.org',
        42 as unknown as string,
      ])) {
        results.push(index);
      }
    };
    await expect(run()).rejects.toThrow(/index 2 is not one/);
    expect(results.sort()).toEqual([0, 1]);
  });

  it("rejects with the signal's reason, passing the signal to what is in flight", async () => {
    const { verify, aborted } = controlledVerify();
    const controller = new AbortController();
    const iterator = verifyEach(addresses(100, 10), { signal: controller.signal }, verify);
    const next = iterator.next();
    controller.abort(new Error('stop now'));
    await expect(next).rejects.toThrow('stop now');
    expect(aborted()).toBeGreaterThan(0);
  });

  /**
   * An async source that gives `count` addresses, then has its next item pending until told
   * (a pipe whose writer is slow or silent), or fails with `failure`.
   */
  function slowSource(count: number, failure?: Error) {
    let given = 0;
    let closed = false;
    let release: (() => void) | undefined;
    const source: AsyncIterableIterator<string> = {
      [Symbol.asyncIterator]() {
        return this;
      },
      next() {
        if (given < count) return Promise.resolve({ done: false, value: `u${given++}@d.org` });
        if (failure !== undefined) return Promise.reject(failure);
        return new Promise((resolve) => {
          release = () => resolve({ done: true, value: undefined });
        });
      },
      async return() {
        closed = true;
        release?.();
        return { done: true, value: undefined };
      },
    };
    return { source, closed: () => closed };
  }

  it('yields what is verified while the source has not given its next item', async () => {
    const { source, closed } = slowSource(10);
    const answer: VerifyOne = async (address) => ({ email: address }) as Verdict;
    const iterator = verifyEach(source, {}, answer);
    const indexes: number[] = [];
    for (let i = 0; i < 10; i++) {
      const step = await iterator.next();
      expect(step.done).toBe(false);
      if (step.done !== true) indexes.push(step.value.index);
    }
    // Every address read is answered, though the source is still open and silent.
    expect(indexes.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await iterator.return();
    expect(closed()).toBe(true);
  });

  it("rejects with the signal's reason while the source is silent", async () => {
    const { source } = slowSource(0);
    const controller = new AbortController();
    const iterator = verifyEach(source, { signal: controller.signal }, offline.verifySync);
    const next = iterator.next();
    controller.abort(new Error('stop reading'));
    await expect(next).rejects.toThrow('stop reading');
  });

  it('leaves no listener on a signal that outlives the run', async () => {
    // A host may pass one long-lived signal (its shutdown) to every run: each finished run
    // must let go of it, or the signal keeps every run it ever saw.
    const controller = new AbortController();
    for (let run = 0; run < 3; run++) {
      await collect(offline.verifyMany(addresses(5, 2), { signal: controller.signal }));
    }
    async function* slow() {
      await Promise.resolve();
      yield 'ann@d.org';
    }
    await collect(verifyEach(slow(), { signal: controller.signal }, offline.verifySync));
    expect(getEventListeners(controller.signal, 'abort')).toEqual([]);
  });

  it("a failing source's error comes after the results read before it", async () => {
    const { source } = slowSource(3, new Error('the pipe broke'));
    const answer: VerifyOne = async (address) => ({ email: address }) as Verdict;
    const indexes: number[] = [];
    const run = async () => {
      for await (const { index } of verifyEach(source, {}, answer)) indexes.push(index);
    };
    await expect(run()).rejects.toThrow('the pipe broke');
    expect(indexes.sort()).toEqual([0, 1, 2]);
  });

  it('closes its source when the caller stops early', async () => {
    let closed = false;
    function* source() {
      try {
        for (let i = 0; ; i++) yield `u${i}@d${i % 3}.org`;
      } finally {
        closed = true;
      }
    }
    for await (const { index } of offline.verifyMany(source())) if (index > 10) break;
    expect(closed).toBe(true);
  });
});
