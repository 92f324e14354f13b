import { describe, expect, it } from 'vitest';
import { parseAddress } from '../../src/address/parse.js';

const rfc = { profile: 'rfc' } as const;

function domainOf(input: string, options = rfc): string {
  const parsed = parseAddress(input, options);
  if (!parsed.ok) throw new Error(`${input}: ${parsed.code}`);
  return parsed.domain;
}

describe('IPv6 address literals normalize to RFC 5952 text', () => {
  // python-email-validator's test_domain_literal: [IPv6:0000:...:0001] normalizes to
  // [IPv6:::1]. RFC 5952 4: no leading zeros, the longest run of two or more zero groups as
  // "::" (the first on a tie), lowercase hex; RFC 5952 5 keeps an IPv4 tail dotted.
  it.each([
    ['me@[IPv6:0000:0000:0000:0000:0000:0000:0000:0001]', '[IPv6:::1]'],
    ['me@[IPv6:::1]', '[IPv6:::1]'],
    ['me@[ipv6:2001:DB8::1]', '[IPv6:2001:db8::1]'],
    ['me@[IPv6:2001:0db8:0000:0000:0000:0000:0000:0001]', '[IPv6:2001:db8::1]'],
    ['me@[IPv6:2001:db8:0:0:1:0:0:1]', '[IPv6:2001:db8::1:0:0:1]'],
    ['me@[IPv6:2001:0:0:1:0:0:0:1]', '[IPv6:2001:0:0:1::1]'],
    ['me@[IPv6:2001:db8:0:1:1:1:1:1]', '[IPv6:2001:db8:0:1:1:1:1:1]'],
    ['me@[IPv6:1111:2222:3333:4444:5555::8888]', '[IPv6:1111:2222:3333:4444:5555::8888]'],
    ['me@[IPv6:::]', '[IPv6:::]'],
    ['me@[IPv6:0:0:0:0:0:0:0:0]', '[IPv6:::]'],
    ['me@[IPv6:1:0:0:0:0:0:0:0]', '[IPv6:1::]'],
    ['me@[IPv6:0:0:0:0:0:ffff:192.0.2.1]', '[IPv6:::ffff:192.0.2.1]'],
    ['me@[IPv6:::FFFF:192.0.2.1]', '[IPv6:::ffff:192.0.2.1]'],
    [
      'me@[IPv6:1111:2222:3333:4444:0:0:255.255.255.255]',
      '[IPv6:1111:2222:3333:4444::255.255.255.255]',
    ],
    [
      'me@[IPv6:1111:2222:3333:4444:5555:6666:255.255.255.255]',
      '[IPv6:1111:2222:3333:4444:5555:6666:255.255.255.255]',
    ],
  ])('%s -> %s', (input, domain) => {
    expect(domainOf(input)).toBe(domain);
    // The normalized address is a fixed point: parsing it again gives itself.
    expect(domainOf(`me@${domain}`)).toBe(domain);
  });
});

describe('a local part that NFC makes ASCII needs no SMTPUTF8', () => {
  // U+212A KELVIN SIGN and U+1FEF GREEK VARIA are canonical singletons: NFC turns them into
  // 'K' and '`' (RFC 6532 3.1 asks for NFC). The normalized local part is then plain ASCII,
  // so the address has an ASCII form and needs no SMTPUTF8 (RFC 6531 applies to non-ASCII
  // mailbox names only); we said smtpUtf8: true and asciiAddress: null, while the normalized
  // address parsed again said the opposite.
  it.each([
    ['\u212Aelvin@example.com', 'Kelvin@example.com'],
    ['a\u1FEFb@example.com', 'a`b@example.com'],
    ['\u212A@b\u00fccher.de', 'K@xn--bcher-kva.de'],
  ])('%s', (input, ascii) => {
    const parsed = parseAddress(input);
    expect(parsed).toMatchObject({ ok: true, smtpUtf8: false, asciiAddress: ascii });
    const again = parseAddress(parsed.ok ? parsed.address : '');
    expect(again).toMatchObject({ ok: true, smtpUtf8: false, asciiAddress: ascii });
  });

  it('in a quoted local part too', () => {
    const parsed = parseAddress('"\u212A x"@example.com', { allowQuotedLocal: true });
    expect(parsed).toMatchObject({
      ok: true,
      local: '"K x"',
      smtpUtf8: false,
      asciiAddress: '"K x"@example.com',
    });
  });

  it('still refuses what NFC turns into a character atext forbids', () => {
    // U+037E GREEK QUESTION MARK is ';' once normalized.
    expect(parseAddress('a\u037Eb@example.com')).toMatchObject({
      ok: false,
      code: 'bad_character',
    });
  });
});

describe('RFC 2142 mailbox names are case-insensitive', () => {
  // RFC 2142 2: "Mailbox names must be recognized independent of character case" (and RFC
  // 5321 4.5.1 for postmaster). python-email-validator normalizes these fifteen names to
  // lowercase (test_case_insensitive_mailbox_name); we kept POSTMASTER@ as written.
  it.each([
    ['POSTMASTER@example.com', 'postmaster@example.com'],
    ['PostMaster@Example.COM', 'postmaster@example.com'],
    ['Info@example.com', 'info@example.com'],
    ['SALES@bücher.de', 'sales@bücher.de'],
    ['WWW@example.com', 'www@example.com'],
    ['Abuse@example.com', 'abuse@example.com'],
    ['"Webmaster"@example.com', 'webmaster@example.com'],
  ])('%s -> %s', (input, address) => {
    const parsed = parseAddress(input, { allowQuotedLocal: true });
    expect(parsed).toMatchObject({ ok: true, address, local: address.split('@')[0] });
  });

  it.each([
    ['NOT-POSTMASTER@example.com', 'NOT-POSTMASTER'],
    ['Postmaster+x@example.com', 'Postmaster+x'],
    ['Ann@example.com', 'Ann'],
    ['InfoDesk@example.com', 'InfoDesk'],
  ])('%s keeps its case', (input, local) => {
    expect(parseAddress(input)).toMatchObject({ ok: true, local });
  });
});
