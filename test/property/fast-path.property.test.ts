import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCommonAscii } from '../../src/address/fast-path.js';
import { DEFAULT_PROFILE, RFC_PROFILE } from '../../src/address/options.js';
import { parseGeneral } from '../../src/address/parse.js';
import { fcParams } from '../helpers/fast-check.js';

// The fast path must never accept what the full parser refuses, nor normalize differently.
const asciiAddressLike = fc.string({
  unit: fc.constantFrom(
    'a',
    'B',
    'z',
    '0',
    '9',
    '.',
    '-',
    '@',
    '_',
    '+',
    'x',
    'n',
    '"',
    '<',
    ' ',
    'q',
    'c',
    'o',
    'm',
    't',
    'e',
    's',
    'l',
  ),
  maxLength: 40,
});
const plausible = fc
  .tuple(
    fc.stringMatching(/^[\w.+-]{1,20}$/),
    // fast-check cannot generate from a regular expression with the i flag.
    // eslint-disable-next-line regexp/use-ignore-case
    fc.array(fc.stringMatching(/^[a-zA-Z0-9-]{1,12}$/), { minLength: 1, maxLength: 4 }),
  )
  .map(([local, labels]) => `${local}@${labels.join('.')}`);

describe('ASCII fast path', () => {
  it('agrees with the full parser wherever it answers', () => {
    fc.assert(
      fc.property(fc.oneof(asciiAddressLike, plausible), fc.boolean(), (input, rfc) => {
        const rules = rfc ? RFC_PROFILE : DEFAULT_PROFILE;
        const fast = parseCommonAscii(input, rules);
        if (fast === undefined) return;
        expect(fast.ok).toBe(true);
        expect(parseGeneral(input, rules)).toEqual(fast);
      }),
      fcParams({ numRuns: 5000 }),
    );
  });
});
