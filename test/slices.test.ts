import { describe, expect, it } from 'vitest';
import { nextSlice, sliceSpent } from '../src/slices.js';
import { turnCounter } from './helpers/turns.js';

/** A task of `steps` steps that yields once its slice is spent, logging each step. */
async function task(name: string, steps: number, sliceMs: number, log: string[]): Promise<void> {
  for (let step = 1; step <= steps; step++) {
    log.push(`${name}${step}`);
    if (sliceSpent(sliceMs)) await nextSlice();
  }
}

describe('time slices', () => {
  it('hands the event loop back between slices: a turn of the loop passes each time', async () => {
    const counter = turnCounter();
    await task('a', 50, 0, []);
    counter.stop();
    // One slice a turn: the loop turned about once per step, where an unsliced loop of
    // promises would have let it turn not once.
    expect(counter.turns()).toBeGreaterThanOrEqual(25);
  });

  it('never yields within an unspent slice', async () => {
    const counter = turnCounter();
    await task('a', 50, Number.POSITIVE_INFINITY, []);
    counter.stop();
    expect(counter.turns()).toBe(0);
  });

  it('gives the tasks waiting one slice a turn each, in turn', async () => {
    const log: string[] = [];
    await Promise.all([task('a', 3, 0, log), task('b', 3, 0, log), task('c', 2, 0, log)]);
    expect(log).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'c2', 'a3', 'b3']);
  });

  it('runs what was queued meanwhile between the slices of the tasks waiting', async () => {
    const log: string[] = [];
    const work = Promise.all([task('a', 20, 0, log), task('b', 20, 0, log)]);
    // Queued behind the first turn: it runs within a round of the tasks, not after them.
    setImmediate(() => log.push('io'));
    await work;
    expect(log.indexOf('io')).toBeLessThan(log.indexOf('a3'));
  });
});
