import punycode from 'punycode/punycode.js';
import { describe, expect, it } from 'vitest';
import type { ParseErrorCode } from '../../src/address/errors.js';
import { checkULabel, isIdna2008Label } from '../../src/address/idna.js';
import { parseAddress, type ParseResult } from '../../src/address/parse.js';

function code(result: ParseResult): ParseErrorCode | 'ok' {
  return result.ok ? 'ok' : result.code;
}

/** The domain with each non-ASCII label as its A-label (lowercase, NFC, punycode). */
function aLabels(domain: string): string {
  return domain
    .split('.')
    .map((label) => label.normalize('NFC').toLowerCase())
    .map((label) => ([...label].every((c) => c < '\x80') ? label : `xn--${punycode.encode(label)}`))
    .join('.');
}

// [domain as written, verdict, the rule behind it]. Every row is also checked in its A-label
// form, which must get the same verdict (one rule set for every label, RFC 5891 5.3).
const CASES: ReadonlyArray<readonly [string, ParseErrorCode | 'ok', string]> = [
  // Hyphens: RFC 5891 4.2.3.1 and UTS-46 CheckHyphens, the same in U-labels and A-labels.
  ['ab--cd.com', 'invalid_idn', 'R-LDH label: -- in positions 3-4'],
  ['bü--cher.de', 'invalid_idn', 'U-label with -- in positions 3-4'],
  ['ab--ü.de', 'invalid_idn', 'U-label with -- in positions 3-4'],
  ['-bücher.de', 'hyphen_position', 'U-label starting with a hyphen'],
  ['bücher-.de', 'hyphen_position', 'U-label ending with a hyphen'],
  ['bü-cher.de', 'ok', 'a hyphen elsewhere'],
  ['b-ü.de', 'ok', 'a hyphen in position 2'],

  // RFC 5893 section 2, the Bidi rule, in a Bidi domain (one with a right-to-left label).
  ['שלום.com', 'ok', 'rule 1: a right-to-left label starts with R'],
  ['مثال.com', 'ok', 'rule 1: ... or with AL'],
  ['1שלום.com', 'invalid_idn', 'rule 1: a right-to-left label may not start with a digit'],
  ['\u0660ب.com', 'invalid_idn', 'rule 1: ... nor with an Arabic-Indic digit (AN)'],
  ['שלוםabc.com', 'invalid_idn', 'rule 2: no L character in a right-to-left label'],
  ['שלום1.com', 'ok', 'rules 2-3: EN may end a right-to-left label'],
  ['ש-ם.com', 'ok', 'rule 2: ES inside a right-to-left label'],
  ['ש\u05b4.com', 'ok', 'rule 3: R followed by a nonspacing mark'],
  ['ש\u02b9.com', 'invalid_idn', 'rule 3: a right-to-left label may not end with ON'],
  ['ب1\u0662.com', 'invalid_idn', 'rule 4: EN and AN never together'],
  ['ب\u0661\u0662.com', 'ok', 'rule 4: AN alone'],
  ['ب\u06f1\u06f2.com', 'ok', 'rule 4: EN alone'],
  ['abcש.com', 'invalid_idn', 'rule 5: no R character in a left-to-right label'],
  ['a\u02b9.שלום.com', 'invalid_idn', 'rule 6: a left-to-right label ends in L or EN'],
  ['a\u02b9.com', 'ok', 'rule 6 applies only in a Bidi domain'],
  ['1a.שלום.com', 'invalid_idn', 'rule 1 for every label of a Bidi domain'],
  ['1a.com', 'ok', 'a leading digit is fine outside a Bidi domain'],

  // RFC 5892 Appendix A.3-A.9, CONTEXTO (no UTS-46 counterpart).
  ['l·l.cat', 'ok', 'A.3: Catalan middle dot between two l'],
  ['col·legi.cat', 'ok', 'A.3: inside a word'],
  ['a·b.cat', 'invalid_idn', 'A.3: not between two l'],
  ['·l.cat', 'invalid_idn', 'A.3: at the start'],
  ['l·.cat', 'invalid_idn', 'A.3: at the end'],
  ['\u0375α.gr', 'ok', 'A.4: keraia followed by Greek'],
  ['\u0375a.gr', 'invalid_idn', 'A.4: keraia followed by Latin'],
  ['α\u0375.gr', 'invalid_idn', 'A.4: keraia at the end'],
  ['א\u05f3.il', 'ok', 'A.5: geresh after Hebrew'],
  ['\u05f3א.il', 'invalid_idn', 'A.5: geresh at the start'],
  ['א\u05f4ב.il', 'ok', 'A.6: gershayim after Hebrew'],
  ['ب\u05f4.il', 'invalid_idn', 'A.6: gershayim after Arabic'],
  ['アイ・ウ.jp', 'ok', 'A.7: katakana middle dot with Katakana'],
  ['ひ・ら.jp', 'ok', 'A.7: with Hiragana'],
  ['漢・字.jp', 'ok', 'A.7: with Han'],
  ['・.jp', 'invalid_idn', 'A.7: alone'],
  ['a・b.jp', 'invalid_idn', 'A.7: with Latin only'],
  ['ب\u0660\u0661.eg', 'ok', 'A.8: Arabic-Indic digits'],
  ['ب\u0660\u06f1.eg', 'invalid_idn', 'A.8: mixed with extended Arabic-Indic digits'],
  ['ب\u06f1\u06f2.ir', 'ok', 'A.9: extended Arabic-Indic digits'],
  ['ب\u06f1\u0661.ir', 'invalid_idn', 'A.9: mixed with Arabic-Indic digits'],

  // RFC 5892 section 3, the derived property: PVALID, not a general category.
  ['faß.de', 'ok', '2.6: U+00DF is a PVALID exception'],
  ['ς.gr', 'ok', '2.6: U+03C2 final sigma is a PVALID exception'],
  ['〇.jp', 'ok', '2.6: U+3007 is a PVALID exception'],
  ['aـb.com', 'bad_character', '2.6: U+0640 tatweel is a DISALLOWED exception'],
  ['a〻.jp', 'bad_character', '2.6: U+303B is a DISALLOWED exception'],
  ['☃.com', 'bad_character', '2.2 A: a symbol (valid in UTS-46, NV8)'],
  ['😀.com', 'bad_character', '2.2 A: an emoji'],
  ['a\u20dd.com', 'bad_character', '2.2 A: an enclosing mark (Me) is not PVALID'],
  ['\u1100.kr', 'bad_character', '2.9 I: a conjoining (old Hangul) jamo'],
  ['\u1100\u1161.kr', 'ok', 'NFC first: jamo L + V compose into the syllable 가'],
  ['a\u{1d15e}.com', 'bad_character', '2.5 D: the Musical Symbols block'],
  ['\u0301a.com', 'invalid_idn', 'RFC 5891 5.4: a leading combining mark'],
  ['bu\u0308cher.de', 'ok', 'NFC first: u + U+0308 is ü'],
];

// RFC 5892 Appendix A.1 and A.2, CONTEXTJ (UTS-46 CheckJoiners): the rfc profile's verdicts.
// The default profile refuses every joiner as the unsafe character it is anywhere else in an
// address (python-email-validator's rule), whether written or encoded in an A-label.
const JOINER_CASES: ReadonlyArray<readonly [string, ParseErrorCode | 'ok', string]> = [
  ['क्\u200cष.in', 'ok', 'A.1: ZWNJ after a virama'],
  ['می\u200cخواهم.ir', 'ok', 'A.1: ZWNJ between joining letters (Persian)'],
  ['نامه\u200cای.com', 'ok', 'A.1: ZWNJ between joining letters (Persian)'],
  ['a\u200cb.com', 'invalid_idn', 'A.1: ZWNJ with neither context'],
  ['\u200cab.com', 'invalid_idn', 'A.1: ZWNJ at the start'],
  ['क्\u200dष.in', 'ok', 'A.2: ZWJ after a virama'],
  ['ශ්\u200dරී.com', 'ok', 'A.2: ZWJ after a virama (Sinhala shri)'],
  ['a\u200db.com', 'invalid_idn', 'A.2: ZWJ elsewhere'],
];

describe('joiners (ZWNJ, ZWJ) in a domain', () => {
  it.each(JOINER_CASES)(
    '%s: %s in the rfc profile (%s), as written and as A-labels',
    (domain, expected) => {
      for (const form of [domain, aLabels(domain)]) {
        expect([form, code(parseAddress(`user@${form}`, { profile: 'rfc' }))]).toEqual([
          form,
          expected,
        ]);
      }
    },
  );

  it.each(JOINER_CASES)(
    '%s: unsafe_character in the default profile, as written and as A-labels',
    (domain) => {
      for (const form of [domain, aLabels(domain)]) {
        const parsed = parseAddress(`user@${form}`);
        expect([form, code(parsed)]).toEqual([form, 'unsafe_character']);
        expect(parsed.ok ? '' : parsed.message).toMatch(/unsafe character: U\+200[CD]\./);
      }
    },
  );

  it('follows allowDomainJoiners over either profile, and never lets one into a local part', () => {
    const sri = 'user@ශ්\u200dරී.com';
    expect(code(parseAddress(sri, { allowDomainJoiners: true }))).toBe('ok');
    expect(code(parseAddress(sri, { profile: 'rfc', allowDomainJoiners: false }))).toBe(
      'unsafe_character',
    );
    expect(code(parseAddress('us\u200der@example.com', { profile: 'rfc' }))).toBe(
      'unsafe_character',
    );
    expect(code(parseAddress('"us\u200cer"@example.com', { profile: 'rfc' }))).toBe(
      'unsafe_character',
    );
  });
});

describe('IDNA 2008 conformance', () => {
  it.each(CASES)('%s -> %s (%s)', (domain, expected) => {
    expect(code(parseAddress(`user@${domain}`))).toBe(expected);
  });

  it.each(CASES)('%s gets the same verdict as its A-labels', (domain) => {
    const asWritten = parseAddress(`user@${domain}`);
    const encoded = parseAddress(`user@${aLabels(domain)}`);
    expect(encoded.ok).toBe(asWritten.ok);
    if (asWritten.ok && encoded.ok) {
      expect(encoded.asciiDomain).toBe(asWritten.asciiDomain);
      expect(encoded.domain).toBe(asWritten.domain);
    }
  });

  it('gives the same verdict in the rfc profile', () => {
    for (const [domain, expected] of CASES) {
      const rfc = parseAddress(`user@${domain}`, { profile: 'rfc' });
      expect([domain, rfc.ok]).toEqual([domain, expected === 'ok']);
    }
  });

  it('checks an A-label as written: canonical, lowercase-insensitive, decoding to non-ASCII', () => {
    expect(parseAddress('user@XN--BCHER-KVA.DE')).toMatchObject({
      ok: true,
      domain: 'bücher.de',
      asciiDomain: 'xn--bcher-kva.de',
    });
    expect(code(parseAddress('user@xn--abc.com'))).toBe('invalid_idn'); // decodes to ASCII
    expect(code(parseAddress('user@xn--0.com'))).toBe('invalid_idn'); // not punycode
    expect(code(parseAddress('user@xn--n3h.com'))).toBe('invalid_idn'); // ☃, valid in UTS-46 only
    expect(code(parseAddress('user@xn--ab---3ra.de'))).toBe('invalid_idn'); // ab--ü
    // 'bücher' decomposed (u + U+0308) is not NFC: no canonical A-label encodes it.
    expect(code(parseAddress(`user@xn--${punycode.encode('bu\u0308cher')}.de`))).toBe(
      'invalid_idn',
    );
  });

  it('maps with UTS-46 before checking, and refuses what the mapping would hide', () => {
    expect(parseAddress('user@Bücher.DE')).toMatchObject({ asciiDomain: 'xn--bcher-kva.de' });
    expect(parseAddress('user@ＥＸＡＭＰＬＥ．com')).toMatchObject({ asciiDomain: 'example.com' });
    expect(parseAddress('user@例え。jp')).toMatchObject({ ok: true, domain: '例え.jp' });
    expect(code(parseAddress('user@exa\u00admple.com'))).toBe('unsafe_character');
    expect(code(parseAddress('user@exa\u200bmple.com'))).toBe('unsafe_character');
    expect(code(parseAddress('user@⒈example.com'))).toBe('bad_character'); // maps to "1."
  });

  it('keeps mixed scripts a risk factor, not an error', () => {
    expect(parseAddress('user@pаypal.com')).toMatchObject({ ok: true, confusable: true });
    expect(parseAddress('user@xn--pypal-4ve.com')).toMatchObject({ ok: true, confusable: true });
  });

  it('refuses an overlong label before mapping it', () => {
    expect(code(parseAddress(`user@${'ü'.repeat(64)}.de`))).toBe('label_too_long');
    expect(code(parseAddress(`user@${'ü'.repeat(300)}.de`))).toBe('label_too_long');
    expect(code(parseAddress(`user@${'a\ufe0f'.repeat(300)}.de`))).toBe('label_too_long');
  });

  it('exposes the label rules', () => {
    expect(isIdna2008Label('bücher')).toBe(true);
    expect(checkULabel('a·b', false)).toMatchObject({ code: 'invalid_idn' });
    expect(checkULabel('☃', true)).toMatchObject({ code: 'invalid_idn' });
    expect(checkULabel('☃', false)).toMatchObject({ code: 'bad_character' });
  });
});

describe('quoted local parts with UTF-8 (RFC 6531)', () => {
  const rfc = { profile: 'rfc' } as const;
  it.each<[string, ParseErrorCode | 'ok']>([
    ['"John Doe"@example.com', 'ok'],
    ['"Jöhn Doe"@example.com', 'ok'],
    ['"Jöhn\u200bDoe"@example.com', 'unsafe_character'], // a format character
    ['"Jöhn\u00a0Doe"@example.com', 'unsafe_character'], // a space that is not U+0020
    ['"Jöhn\u2028Doe"@example.com', 'unsafe_character'], // a line separator
    ['"Jöhn\u0007Doe"@example.com', 'bad_character'], // a control
  ])('%j -> %s', (input, expected) => {
    expect(code(parseAddress(input, rfc))).toBe(expected);
  });

  it('keeps the quotes and NFC', () => {
    expect(parseAddress('"Jo\u0308hn Doe"@example.com', rfc)).toMatchObject({
      ok: true,
      local: '"Jöhn Doe"',
      smtpUtf8: true,
    });
  });
});

describe('messages about an A-label name it as written', () => {
  // xn--ab decodes to U+0081, a C1 control: the message quoted that invisible character as
  // the label's name ("The label '' has ..."). It names the A-label the user typed instead.
  it.each([
    ['me@xn--ab.com', 'xn--ab'],
    ['me@xn--a.com', 'xn--a'],
    ['me@xn--vek.jp', 'xn--vek'],
  ])('%s', (input, shown) => {
    const parsed = parseAddress(input);
    expect(parsed).toMatchObject({ ok: false, code: 'invalid_idn' });
    if (parsed.ok) return;
    expect(parsed.message).toContain(`'${shown}'`);
    const controls = [...parsed.message].filter((c) => /\p{Cc}/u.test(c));
    expect(controls).toEqual([]);
  });
});
