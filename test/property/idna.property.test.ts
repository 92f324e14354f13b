import fc from 'fast-check';
import punycode from 'punycode/punycode.js';
import tr46 from 'tr46';
import { describe, expect, it } from 'vitest';
import { parseAddress } from '../../src/address/parse.js';
import { fcParams } from '../helpers/fast-check.js';

// Characters that exercise every IDNA 2008 rule: LDH, Latin with accents (precomposed and
// decomposed), scripts written right to left and their digits, the CONTEXTO and CONTEXTJ
// characters and what their contexts ask for, and some that IDNA 2008 disallows (emoji, a
// symbol, tatweel, a modifier letter of Bidi class ON). Characters that UTS-46 maps away or
// ignores (soft hyphen, fullwidth forms) are left out: the parser refuses those as written,
// on purpose, while their A-label form would be of the mapped text.
const UNITS = [
  ...'abclnxz019-',
  ...'ABÜ',
  ...'üéßς',
  'e\u0301', // é decomposed: NFC composes it before encoding
  ...'αβ\u0375', // Greek, and the keraia (A.4)
  ...'אב\u05f3\u05f4\u05b4', // Hebrew, geresh, gershayim (A.5, A.6), a point (NSM)
  ...'بمی\u0660\u0661\u06f1\u06f2', // Arabic, Arabic-Indic digits of both kinds (A.8, A.9)
  ...'アイひ漢\u30fb', // Japanese and the katakana middle dot (A.7)
  '\u00b7', // middle dot (A.3)
  ...'कष\u094d', // Devanagari and its virama
  '\u200c', // ZWNJ (A.1)
  '\u200d', // ZWJ (A.2)
  '\u0301', // a combining mark, which may not start a label
  '😀',
  '☃',
  '\u0640',
  '\u02b9',
];
// Labels of one script pass far more often than a mix: both verdicts get exercised.
const POOLS = [
  UNITS,
  [...'abclnxz019-', '\u00b7', ...'üéß', 'e\u0301', '\u02b9'],
  [...'αβ\u0375', ...'19'],
  [...'אב\u05f3\u05f4\u05b4', ...'19-'],
  [...'بمی\u0660\u0661\u06f1\u06f2', '\u200c'],
  [...'アイひ漢\u30fb', ...'ab1'],
  [...'कष\u094d', '\u200c', '\u200d'],
];
const label = fc
  .constantFrom(...POOLS)
  .chain((pool) => fc.array(fc.constantFrom(...pool), { minLength: 1, maxLength: 8 }))
  .map((units) => units.join(''));
const domain = fc
  .tuple(fc.array(label, { minLength: 1, maxLength: 3 }), fc.constantFrom('com', 'de', 'xn--p1ai'))
  .map(([labels, tld]) => [...labels, tld].join('.'));

/** The address with its domain in A-labels: each label lowercased, NFC, punycode if needed. */
function asciiForm(address: string): string {
  const at = address.lastIndexOf('@');
  const labels = address
    .slice(at + 1)
    .split('.')
    .map((l) => l.normalize('NFC').toLowerCase())
    .map((l) => ([...l].every((c) => c < '\x80') ? l : `xn--${punycode.encode(l)}`));
  return `${address.slice(0, at)}@${labels.join('.')}`;
}

describe('IDNA properties', () => {
  it('an address and its A-label form get the same verdict, and the same A-labels', () => {
    fc.assert(
      fc.property(domain, fc.boolean(), (host, rfc) => {
        const options = rfc ? ({ profile: 'rfc' } as const) : undefined;
        const address = `user@${host}`;
        const asWritten = parseAddress(address, options);
        const encoded = parseAddress(asciiForm(address), options);
        expect({ address, ok: encoded.ok }).toEqual({ address, ok: asWritten.ok });
        if (asWritten.ok && encoded.ok) {
          expect(encoded.asciiDomain).toBe(asWritten.asciiDomain);
          expect(encoded.domain).toBe(asWritten.domain);
        }
      }),
      fcParams({ numRuns: 5000 }),
    );
  });

  it('never accepts what UTS-46 with every check on refuses', () => {
    const strict = {
      checkHyphens: true,
      checkBidi: true,
      checkJoiners: true,
      useSTD3ASCIIRules: true,
      verifyDNSLength: true,
    };
    fc.assert(
      fc.property(domain, (host) => {
        const parsed = parseAddress(`user@${host}`);
        if (parsed.ok) expect(tr46.toASCII(parsed.asciiDomain, strict)).toBe(parsed.asciiDomain);
      }),
      fcParams({ numRuns: 2000 }),
    );
  });

  it('gives tr46 verdicts on Bidi and joiners (characters both hold PVALID)', () => {
    // L, R, AL, AN, EN, ES, ON, NSM, a virama, transparent and joining letters, ZWNJ, ZWJ:
    // no CONTEXTO rule can fail with one set of Arabic-Indic digits, and none of these is
    // valid in UTS-46 yet disallowed by IDNA 2008 but U+02B9, a modifier letter (PVALID).
    const bidiUnits = [...'abü1-', ...'אב\u05b4', ...'بم\u064b\u0660', '\u0301', '\u02b9'].concat([
      'क',
      '\u094d',
      '\u200c',
      '\u200d',
    ]);
    const bidiLabel = fc
      .array(fc.constantFrom(...bidiUnits), { minLength: 1, maxLength: 6 })
      .map((units) => units.join(''));
    const strict = {
      checkHyphens: true,
      checkBidi: true,
      checkJoiners: true,
      useSTD3ASCIIRules: true,
    };
    fc.assert(
      fc.property(fc.array(bidiLabel, { minLength: 1, maxLength: 3 }), (labels) => {
        const host = [...labels, 'com'].join('.');
        // The rfc profile: IDNA 2008 alone decides on joiners (the default refuses them).
        const ours = parseAddress(`user@${host}`, { profile: 'rfc' }).ok;
        expect({ host, ok: ours }).toEqual({ host, ok: tr46.toASCII(host, strict) !== null });
      }),
      fcParams({ numRuns: 5000 }),
    );
  });

  it('the default profile refuses a joiner anywhere in a domain, written or encoded', () => {
    fc.assert(
      fc.property(domain, (host) => {
        if (!/[\u200c\u200d]/.test(host)) return;
        for (const address of [`user@${host}`, asciiForm(`user@${host}`)]) {
          const parsed = parseAddress(address);
          // The unsafe rule, unless an earlier rule refuses the label as written or decoded.
          if (!parsed.ok && parsed.code !== 'unsafe_character') {
            expect(parseAddress(address, { profile: 'rfc' }).ok).toBe(false);
          } else {
            expect({ address, ok: parsed.ok }).toEqual({ address, ok: false });
          }
        }
      }),
      fcParams({ numRuns: 3000 }),
    );
  });

  it('an accepted domain re-parses from its Unicode form to the same A-labels', () => {
    fc.assert(
      fc.property(domain, (host) => {
        const first = parseAddress(`user@${host}`);
        if (!first.ok) return;
        const again = parseAddress(`user@${first.domain}`);
        expect(again).toMatchObject({ ok: true, asciiDomain: first.asciiDomain });
      }),
      fcParams({ numRuns: 2000 }),
    );
  });
});
