import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import * as bits from '../../src/address/code-points.js';
import { codePointProperties, uts46Mapping } from '../../src/address/code-points.js';
// @ts-expect-error: a plain .mjs build script without type declarations
import { compileIdna, IDNA_BITS } from '../../scripts/compile-data.mjs';

const derived = (codePoint: number) => codePointProperties(codePoint) & bits.DERIVED;

describe('compiled IDNA data', () => {
  it('src/data/generated/idna.ts is up to date with its packages (run `npm run data`)', async () => {
    const committed = readFileSync(
      new URL('../../src/data/generated/idna.ts', import.meta.url),
      'utf8',
    );
    expect(committed).toBe(await (compileIdna as () => Promise<string>)());
  });

  it('the parser reads the bits the build script writes', () => {
    for (const [name, value] of Object.entries(IDNA_BITS as Record<string, number>)) {
      expect([name, (bits as Record<string, unknown>)[name]]).toEqual([name, value]);
    }
  });

  it('holds RFC 5892 derived properties', () => {
    const { PVALID, CONTEXTJ, CONTEXTO, DISALLOWED } = bits;
    const expected: Array<[number, number]> = [
      [0x61, PVALID], // a (LDH)
      [0x41, DISALLOWED], // A: unstable under case folding
      [0x5f, DISALLOWED], // _
      [0xdf, PVALID], // ß (exception)
      [0xb7, CONTEXTO], // middle dot
      [0x200c, CONTEXTJ],
      [0x200d, CONTEXTJ],
      [0x640, DISALLOWED], // tatweel (exception)
      [0x660, CONTEXTO],
      [0x6f9, CONTEXTO],
      [0x30fb, CONTEXTO],
      [0x3007, PVALID],
      [0x1100, DISALLOWED], // old Hangul jamo
      [0xac00, PVALID], // Hangul syllable
      [0x2603, DISALLOWED], // snowman, a symbol
      [0x1f600, DISALLOWED], // emoji
      [0xfe0f, DISALLOWED], // variation selector: default ignorable
      [0x1d15e, DISALLOWED], // Musical Symbols block
      [0x20dd, DISALLOWED], // enclosing mark
      [0x301, PVALID], // combining acute (Mn)
      [0xe000, DISALLOWED], // private use
      [0x10ffff, DISALLOWED], // noncharacter
    ];
    expect(expected.map(([cp]) => [cp.toString(16), derived(cp)])).toEqual(
      expected.map(([cp, value]) => [cp.toString(16), value]),
    );
  });

  it('marks unsafe characters, marks, scripts and right-to-left characters', () => {
    expect(codePointProperties(0x200b) & bits.UNSAFE).toBe(bits.UNSAFE);
    expect(codePointProperties(0xad) & bits.UNSAFE).toBe(bits.UNSAFE);
    expect(codePointProperties(0xa0) & bits.UNSAFE).toBe(bits.UNSAFE);
    expect(codePointProperties(0xe9) & bits.UNSAFE).toBe(0);
    expect(codePointProperties(0x301) & bits.MARK).toBe(bits.MARK);
    expect(codePointProperties(0x3b1) & bits.SCRIPT).toBe(bits.GREEK);
    expect(codePointProperties(0x5d0) & bits.SCRIPT).toBe(bits.HEBREW);
    expect(codePointProperties(0x30a2) & bits.SCRIPT).toBe(bits.JAPANESE);
    expect(codePointProperties(0x30fb) & bits.SCRIPT).toBe(0); // Common, not Katakana
    expect(codePointProperties(0x5d0) & bits.RTL).toBe(bits.RTL); // Hebrew alef: R
    expect(codePointProperties(0x628) & bits.RTL).toBe(bits.RTL); // Arabic beh: AL
    expect(codePointProperties(0x660) & bits.RTL).toBe(bits.RTL); // Arabic-Indic zero: AN
    expect(codePointProperties(0x6f0) & bits.RTL).toBe(0); // extended Arabic-Indic zero: EN
  });
});

describe('compiled IDNA data against tr46', () => {
  it('every PVALID or CONTEXT code point is its own UTS-46 mapping (valid or deviation)', () => {
    // idna.ts skips the mapping for text of such code points only.
    const require = createRequire(import.meta.url);
    const table = require('tr46/lib/mappingTable.json') as Array<
      [number | [number, number], number, string?]
    >;
    const VALID = 2;
    const DEVIATION = 6;
    const mapped: string[] = [];
    for (const [span, status] of table) {
      if (status === VALID || status === DEVIATION) continue;
      const [first, last] = Array.isArray(span) ? span : [span, span];
      for (let cp = first; cp <= last; cp++)
        if (derived(cp) !== bits.DISALLOWED) mapped.push(cp.toString(16));
    }
    expect(mapped).toEqual([]);
  });

  it('maps every code point as tr46 does', () => {
    const require = createRequire(import.meta.url);
    const table = require('tr46/lib/mappingTable.json') as Array<
      [number | [number, number], number, string?]
    >;
    const MAPPED = 1;
    const IGNORED = 7;
    const wrong: string[] = [];
    for (const [span, status, mapping] of table) {
      const [first, last] = Array.isArray(span) ? span : [span, span];
      const expected = status === MAPPED ? mapping : status === IGNORED ? '' : undefined;
      for (let cp = first; cp <= last; cp++) {
        if (uts46Mapping(cp) !== expected) wrong.push(cp.toString(16));
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe('the parser runs in a browser', () => {
  it('nothing under src/address imports a node: module', () => {
    const folder = new URL('../../src/address/', import.meta.url);
    const offenders = readdirSync(folder).filter((name) =>
      /from ['"]node:/.test(readFileSync(new URL(name, folder), 'utf8')),
    );
    expect(offenders).toEqual([]);
  });
});
