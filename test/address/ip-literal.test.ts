import { describe, expect, it } from 'vitest';
import { literalAddress } from '../../src/address/ip-literal.js';

describe('literalAddress', () => {
  it('unwraps a bracketed literal and drops the IPv6 tag in any case', () => {
    expect(literalAddress('[192.0.2.1]')).toBe('192.0.2.1');
    expect(literalAddress('[IPv6:2001:db8::1]')).toBe('2001:db8::1');
    expect(literalAddress('[ipv6:2001:db8::1]')).toBe('2001:db8::1');
    expect(literalAddress('mx.example.com')).toBeUndefined();
    expect(literalAddress('[192.0.2.1')).toBeUndefined();
  });
});
