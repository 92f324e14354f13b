import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAddress } from '../../src/address/parse.js';
import { fcParams } from '../helpers/fast-check.js';

// Strings that look like addresses often enough to reach every branch of the parser.
const atom = fc.stringMatching(/^[\w!#$%&'*+/=?^`{|}~-]{1,12}$/);
const label = fc.stringMatching(/^[a-z\d](?:[a-z\d-]{0,10}[a-z\d])?$/);
const unicodeChunk = fc.string({ unit: 'grapheme', maxLength: 6 });
const plausible = fc
  .tuple(
    fc.array(fc.oneof(atom, unicodeChunk), { minLength: 1, maxLength: 3 }),
    fc.array(fc.oneof(label, unicodeChunk), { minLength: 1, maxLength: 4 }),
    fc.constantFrom('com', 'de', 'xn--p1ai', 'org', 'io'),
  )
  .map(([local, domain, tld]) => `${local.join('.')}@${[...domain, tld].join('.')}`);
const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.string({ unit: 'grapheme', maxLength: 100 }),
  fc.string({
    unit: fc.constantFrom(
      'a',
      '.',
      '"',
      '@',
      '\\',
      '[',
      ']',
      ':',
      '-',
      'é',
      '\u0000',
      '\r',
      '\n',
      ' ',
      'x',
      'n',
    ),
    maxLength: 80,
  }),
  plausible,
);

describe('parser properties', () => {
  it('never throws on any string, with or without the rfc profile', () => {
    fc.assert(
      fc.property(anyString, fc.boolean(), (input, rfc) => {
        const result = parseAddress(input, rfc ? { profile: 'rfc' } : undefined);
        expect(typeof result.ok).toBe('boolean');
        if (!result.ok) expect(result.code).toMatch(/^[a-z_]+$/);
      }),
      fcParams({ numRuns: 3000 }),
    );
  });

  it('normalizing is idempotent: a normalized address parses to itself', () => {
    fc.assert(
      fc.property(fc.oneof(plausible, anyString), fc.boolean(), (input, rfc) => {
        const options = rfc ? ({ profile: 'rfc' } as const) : undefined;
        const first = parseAddress(input, options);
        if (!first.ok) return;
        const second = parseAddress(first.address, options);
        expect(second).toMatchObject({
          ok: true,
          address: first.address,
          asciiDomain: first.asciiDomain,
        });
      }),
      fcParams({ numRuns: 3000 }),
    );
  });

  it('an accepted ASCII form is pure ASCII and re-parses to itself', () => {
    fc.assert(
      fc.property(fc.oneof(plausible, anyString), (input) => {
        const parsed = parseAddress(input);
        if (!parsed.ok || parsed.asciiAddress === null) return;
        expect(/^[\x21-\x7e]+$/.test(parsed.asciiAddress)).toBe(true);
        const again = parseAddress(parsed.asciiAddress);
        expect(again).toMatchObject({ ok: true, asciiAddress: parsed.asciiAddress });
      }),
      fcParams({ numRuns: 3000 }),
    );
  });

  it('never lets CR, LF or NUL into an accepted address', () => {
    fc.assert(
      fc.property(anyString, fc.boolean(), (input, rfc) => {
        const parsed = parseAddress(input, rfc ? { profile: 'rfc' } : undefined);
        if (parsed.ok) expect(/[\r\n\0]/.test(parsed.address)).toBe(false);
      }),
      fcParams({ numRuns: 3000 }),
    );
  });
});
