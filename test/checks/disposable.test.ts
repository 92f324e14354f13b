import { describe, expect, it } from 'vitest';
import { disposable } from '../../src/checks/disposable.js';
import { codeOf } from './helpers.js';

describe('disposable list', () => {
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
