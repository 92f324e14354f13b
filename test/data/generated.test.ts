import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script without type declarations
import { compileLists } from '../../scripts/compile-data.mjs';

describe('compiled data', () => {
  it('src/data/generated/lists.ts is up to date with data/*.txt (run `npm run data`)', () => {
    const committed = readFileSync(
      new URL('../../src/data/generated/lists.ts', import.meta.url),
      'utf8',
    );
    expect(committed).toBe((compileLists as () => string)());
  });
});
