import { expect } from 'vitest';

/**
 * Waiting in tests without asserting on time: a pause that lets other work run, and a
 * condition waited for turn by turn.
 */

/** Resolves after `ms`: lets a server or a child process get on with its work. */
export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until `condition()` holds, looking after each timer turn, and fails the test if it
 * does not within `turns` of them: for what must happen while something else never answers.
 */
export async function eventually(condition: () => boolean, what: string, turns = 500) {
  for (let turn = 0; turn < turns && !condition(); turn++) {
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  expect(condition(), what).toBe(true);
}
