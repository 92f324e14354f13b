import { describe, expect, it } from 'vitest';
import { disposable } from '../../src/checks/disposable.js';
import { freeProvider } from '../../src/checks/free-provider.js';
import { createTypoSuggester } from '../../src/checks/typo.js';
import { codeOf } from './helpers.js';

describe('audit: disposable list', () => {
  const check = disposable();

  // example.com is IANA's documentation domain (RFC 2606 3, RFC 6761 6.5), not a service that
  // hands out throwaway mailboxes; burner-email-providers lists it, and example.net/.org
  // (on no list) were already clean. Its mail is decided by its null MX (RFC 7505).
  it.each(['user@example.com', 'user@EXAMPLE.COM', 'user@example.net', 'user@example.org'])(
    '%s is not disposable',
    (address) => {
      expect(codeOf(check, address)).toBe('pass:ok');
    },
  );

  it('still flags listed domains, their subdomains, in any case', () => {
    expect(codeOf(check, 'user@mailinator.com')).toBe('risky:disposable_domain');
    expect(codeOf(check, 'user@X.Mailinator.COM')).toBe('risky:disposable_domain');
  });
});

describe('audit: free providers', () => {
  const check = freeProvider();

  // Consumer ISP mail often lives under regional or service subdomains of a listed domain:
  // Spectrum's Road Runner (nc.rr.com, tampabay.rr.com), NetEase's and Tencent's VIP mail
  // (vip.163.com, vip.qq.com). Exact matching missed every one of them.
  it.each([
    'ann@gmail.com',
    'ann@GMAIL.COM',
    'ann@nc.rr.com',
    'ann@tampabay.rr.com',
    'ann@vip.163.com',
    'ann@vip.qq.com',
  ])('%s is at a free provider', (address) => {
    expect(codeOf(check, address)).toBe('risky:free_provider');
  });

  it.each(['ann@acme.io', 'ann@notgmail.com', 'ann@gmail.com.acme.io', 'ann@rr.com.acme.io'])(
    '%s is not',
    (address) => {
      expect(codeOf(check, address)).toBe('pass:ok');
    },
  );
});

describe('audit: typo suggestions for short numeric names', () => {
  const suggest = createTypoSuggester();

  // A name of three or four characters takes a neighbour key only as "a digit struck for a
  // letter" (ao1 for aol, typo.ts nameAllows). Digit for digit was taken too, so numeric
  // domains, each a different real site (162.com, 127.com, 263.com: 263 Network's), were
  // "corrected" to NetEase's 163.com and 126.com.
  it.each(['162.com', '164.com', '127.com', '125.com', '263.com'])('%s is left alone', (domain) => {
    expect(suggest(domain)).toBeNull();
  });

  it('still suggests for a digit struck for a letter, and for slips of the suffix', () => {
    expect(suggest('a0l.com')).toBe('aol.com');
    expect(suggest('163.con')).toBe('163.com');
    expect(suggest('gmial.com')).toBe('gmail.com');
    expect(suggest('hotmial.con')).toBe('hotmail.com');
    expect(suggest('yahooo.com')).toBe('yahoo.com');
    expect(suggest('gmx.de')).toBeNull();
    expect(suggest('mail.com')).toBeNull();
  });
});
