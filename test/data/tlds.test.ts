import { readFileSync } from 'node:fs';
import { parse } from 'tldts';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script without type declarations
import { compileTlds, topLevelLabels } from '../../scripts/compile-tlds.mjs';
import { icannTldLookup } from '../../src/checks/domain.js';

const tldtsIcann = (label: string) =>
  parse(label, { allowPrivateDomains: false, extractHostname: false }).isIcann === true;

describe('compiled ICANN TLDs', () => {
  it('src/data/generated/tlds.ts is up to date with tldts (run `npm run data`)', () => {
    const committed = readFileSync(
      new URL('../../src/data/generated/tlds.ts', import.meta.url),
      'utf8',
    );
    expect(committed).toBe((compileTlds as () => string)());
  });

  it('answers exactly as tldts for every top-level label of its trie, and for made-up ones', () => {
    const known = icannTldLookup();
    const labels = (topLevelLabels as () => Array<{ label: string }>)().map(({ label }) => label);
    expect(labels.length).toBeGreaterThan(1_000);
    const candidates = [
      ...labels,
      'notarealtld',
      'local',
      'localhost',
      'test',
      'example',
      'invalid',
      'onion',
      'xn--fiqs8s',
      'co',
      'c0m',
      'con',
    ];
    const mismatches = candidates.filter((label) => known(label) !== tldtsIcann(label));
    expect(mismatches).toEqual([]);
  });
});
