import { describe, expect, it } from 'vitest';
import { parseAddress, type ParseResult } from '../../src/address/parse.js';
import type { ParseErrorCode } from '../../src/address/errors.js';
import { SPECIAL_USE_TLDS } from '../../src/address/domain.js';

function code(result: ParseResult): ParseErrorCode | 'ok' {
  return result.ok ? 'ok' : result.code;
}

describe('parseAddress: default profile', () => {
  it.each<[string, ParseErrorCode | 'ok']>([
    ['', 'empty'],
    ['plainaddress', 'no_at_sign'],
    ['hello＠world.com', 'no_at_sign'],
    ['@example.com', 'empty_local'],
    ['user@', 'empty_domain'],
    ['.user@example.com', 'leading_dot'],
    ['user.@example.com', 'trailing_dot'],
    ['us..er@example.com', 'consecutive_dots'],
    ['us er@example.com', 'bad_character'],
    ['us(er@example.com', 'bad_character'],
    ['user@.example.com', 'leading_dot'],
    ['user@example.com.', 'trailing_dot'],
    ['user@example..com', 'consecutive_dots'],
    ['user@-example.com', 'hyphen_position'],
    ['user@example-.com', 'hyphen_position'],
    ['user@exa_mple.com', 'bad_character'],
    ['user@ab--cd.com', 'invalid_idn'],
    ['user@xn--0.com', 'invalid_idn'],
    ['user@xn--abc.com', 'invalid_idn'], // decodes to pure ASCII: a forged A-label
    ['user@localhost', 'domain_needs_dot'],
    ['user@example.c0m1', 'invalid_tld'],
    ['user@host.onion', 'special_use_domain'],
    ['user@printer.local', 'special_use_domain'],
    ['user@x.internal', 'special_use_domain'],
    ['"john"@example.com', 'quoted_local_not_allowed'],
    ['user@[192.0.2.1]', 'domain_literal_not_allowed'],
    ['John <john@example.com>', 'display_name_not_allowed'],
    ['<john@example.com>', 'display_name_not_allowed'],
    ['\u200bjohn@example.com', 'unsafe_character'],
    ['jo\u00adhn@example.com', 'unsafe_character'],
    ['\u0301john@example.com', 'unsafe_character'],
    ['john@exa\u00admple.com', 'unsafe_character'],
    ['john@😀.com', 'bad_character'],
    ['john@xn--e28h.com', 'invalid_idn'], // the A-label of an emoji: IDNA 2008 disallows it
    ['john@⒈example.com', 'bad_character'],
    ['≮john@example.com', 'bad_character'],
    ['john@example.com\n', 'bad_character'],
    ['a'.repeat(65) + '@example.com', 'local_too_long'],
    ['a'.repeat(64) + '@example.com', 'ok'],
    ['é'.repeat(33) + '@example.com', 'local_too_long'], // 66 octets in 33 characters
    ['user@' + 'a'.repeat(64) + '.com', 'label_too_long'],
    ['user@' + `${'a'.repeat(60)}.`.repeat(5) + 'com', 'domain_too_long'],
    ['x'.repeat(2000), 'too_long'],
    ['John.Doe@Example.COM', 'ok'],
    ["!#$%&'*+-/=?^_`{|}~@example.com", 'ok'],
    ['user@xn--bcher-kva.de', 'ok'],
    ['юзер@екзампл.рф', 'ok'],
  ])('%j -> %s', (input, expected) => {
    expect(code(parseAddress(input))).toBe(expected);
  });

  it('lowercases the domain and keeps the local part case', () => {
    const parsed = parseAddress('John.Doe@Example.COM');
    expect(parsed).toMatchObject({
      ok: true,
      local: 'John.Doe',
      domain: 'example.com',
      address: 'John.Doe@example.com',
      asciiAddress: 'John.Doe@example.com',
      smtpUtf8: false,
    });
  });

  it('maps IDN domains with UTS-46 and keeps both forms', () => {
    const parsed = parseAddress('user@Bücher.DE');
    expect(parsed).toMatchObject({
      ok: true,
      domain: 'bücher.de',
      asciiDomain: 'xn--bcher-kva.de',
      asciiAddress: 'user@xn--bcher-kva.de',
    });
    expect(parseAddress('user@faß.de')).toMatchObject({ asciiDomain: 'xn--fa-hia.de' });
    expect(parseAddress('user@ＥＸＡＭＰＬＥ．com')).toMatchObject({
      ok: true,
      domain: 'example.com',
    });
    expect(parseAddress('user@xn--bcher-kva.de')).toMatchObject({ domain: 'bücher.de' });
  });

  it('NFC-normalizes the local part and flags SMTPUTF8', () => {
    const parsed = parseAddress('jo\u0065\u0301@example.com');
    expect(parsed).toMatchObject({
      ok: true,
      local: 'jo\u00e9',
      asciiAddress: null,
      smtpUtf8: true,
    });
  });

  it('counts lengths in UTF-8 octets, not UTF-16 units', () => {
    expect(code(parseAddress('€'.repeat(21) + '@example.com'))).toBe('ok'); // 63 octets
    expect(code(parseAddress('€'.repeat(22) + '@example.com'))).toBe('local_too_long'); // 66 octets
  });

  it('refuses an address over 254 octets even when each part fits', () => {
    const domain = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`;
    expect(code(parseAddress(`${'x'.repeat(10)}@${domain}`))).toBe('too_long');
  });

  it('flags mixed-script labels as confusable, not invalid', () => {
    expect(parseAddress('user@pаypal.com')).toMatchObject({ ok: true, confusable: true }); // Cyrillic а
    expect(parseAddress('pаypal@example.com')).toMatchObject({ ok: true, confusable: true });
    expect(parseAddress('user@bücher.de')).toMatchObject({ ok: true, confusable: false });
    expect(parseAddress('田中taro@example.jp')).toMatchObject({ ok: true, confusable: false }); // Han + Latin is Japanese
  });

  it('refuses SMTPUTF8 local parts when not allowed', () => {
    expect(code(parseAddress('jöhn@example.com', { allowSmtpUtf8: false }))).toBe(
      'smtputf8_not_allowed',
    );
    expect(code(parseAddress('john@bücher.de', { allowSmtpUtf8: false }))).toBe('ok');
  });

  it('refuses every special-use TLD in any case, and only those', () => {
    for (const tld of SPECIAL_USE_TLDS) {
      expect(code(parseAddress(`user@host.${tld}`))).toBe('special_use_domain');
      expect(code(parseAddress(`user@HOST.${tld.toUpperCase()}`))).toBe('special_use_domain');
      // Same length and first letter, another name: a real (or possible) TLD.
      const lookAlike = `${tld.slice(0, -1)}${tld.endsWith('z') ? 'y' : 'z'}`;
      expect(code(parseAddress(`user@host.${lookAlike}`))).toBe('ok');
      expect(code(parseAddress(`user@host.${tld}s`))).toBe('ok');
    }
    expect(code(parseAddress('user@host.abcdefghijklmnopqrst'))).toBe('ok');
  });

  it('splits at the last @-sign and reports any before it', () => {
    expect(code(parseAddress('a@b@example.com'))).toBe('bad_character');
    expect(code(parseAddress('ab@'))).toBe('empty_domain');
    expect(code(parseAddress('@example.com'))).toBe('empty_local');
  });

  it('gives every failure a human message', () => {
    const result = parseAddress('us..er@example.com');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toMatch(/period/);
  });

  it('throws a TypeError for a non-string', () => {
    expect(() => parseAddress(42 as unknown as string)).toThrow(TypeError);
    expect(() => parseAddress(null as unknown as string)).toThrow(/got null/);
  });

  it('throws a TypeError naming the profiles for an unknown profile or options that are no object', () => {
    for (const profile of ['rfx', 'toString', '']) {
      expect(() => parseAddress('a@example.com', { profile: profile as 'rfc' })).toThrow(
        /^Unknown parse profile ".*": expected one of default, rfc$/,
      );
    }
    for (const options of [null, 'rfc', 7]) {
      expect(() => parseAddress('a@example.com', options as unknown as { profile: 'rfc' })).toThrow(
        /^parse options must be an object/,
      );
    }
  });
});

describe('parseAddress: options and rfc profile', () => {
  it('accepts quoted local parts and unquotes them when quoting was unnecessary', () => {
    expect(parseAddress('"john"@example.com', { allowQuotedLocal: true })).toMatchObject({
      ok: true,
      local: 'john',
    });
    expect(parseAddress('"john doe"@example.com', { allowQuotedLocal: true })).toMatchObject({
      ok: true,
      local: '"john doe"',
    });
    expect(parseAddress('"a\\"b"@example.com', { allowQuotedLocal: true })).toMatchObject({
      ok: true,
      local: '"a\\"b"',
    });
    expect(code(parseAddress('"john@example.com', { allowQuotedLocal: true }))).toBe(
      'unclosed_quote',
    );
    expect(code(parseAddress('"jo"hn@example.com', { allowQuotedLocal: true }))).toBe(
      'bad_character',
    );
  });

  it('validates IPv4 and IPv6 literals', () => {
    const rfc = { profile: 'rfc' } as const;
    expect(parseAddress('user@[192.0.2.1]', rfc)).toMatchObject({
      ok: true,
      domain: '[192.0.2.1]',
      domainLiteral: true,
    });
    expect(code(parseAddress('user@[192.0.2.256]', rfc))).toBe('invalid_domain_literal');
    expect(code(parseAddress('user@[IPv6:2001:db8::1]', rfc))).toBe('ok');
    expect(code(parseAddress('user@[IPv6:::ffff:192.0.2.1]', rfc))).toBe('ok');
    expect(code(parseAddress('user@[IPv6:1::2::3]', rfc))).toBe('invalid_domain_literal');
    expect(code(parseAddress('user@[2001:db8::1]', rfc))).toBe('invalid_domain_literal');
    expect(code(parseAddress('user@[tag:text]', rfc))).toBe('invalid_domain_literal');
  });

  it('drops the deliverability rules when globallyDeliverable is off', () => {
    expect(code(parseAddress('user@localhost', { globallyDeliverable: false }))).toBe('ok');
    expect(code(parseAddress('user@example.123', { globallyDeliverable: false }))).toBe('ok');
    expect(code(parseAddress('user@x.test', { globallyDeliverable: false }))).toBe('ok');
  });
});

describe('parseAddress: hostile input', () => {
  it.each([
    ['a', 'a'.repeat(1_000_000)],
    ['dots', '.'.repeat(1_000_000)],
    ['quotes', '"'.repeat(1_000_000)],
    ['at signs', '@'.repeat(1_000_000)],
    ['backslashes', '\\'.repeat(1_000_000)],
  ])('answers 1 MB of %s with too_long', (_name, input) => {
    expect(code(parseAddress(input))).toBe('too_long');
  });

  it('answers inputs just under the cap without throwing', () => {
    for (const unit of ['a', '.', '"', '@', '\\', 'é', '\ud800', '\u0000', '\r\n']) {
      const result = parseAddress(unit.repeat(Math.floor(1024 / unit.length)), { profile: 'rfc' });
      expect(result.ok).toBe(false);
    }
  });
});
