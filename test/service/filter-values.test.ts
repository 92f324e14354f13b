import { describe, expect, it } from 'vitest';
import { domainChain, literalIp, normalizeFilterValue } from '../../src/service/filter-values.js';

describe('filter values', () => {
  it('lists a domain and its parents, most specific first', () => {
    expect(domainChain('a.b.example.co.uk')).toEqual([
      'a.b.example.co.uk',
      'b.example.co.uk',
      'example.co.uk',
      'co.uk',
      'uk',
    ]);
  });

  it('reads the IP of a domain literal', () => {
    expect(literalIp('[192.0.2.1]')).toBe('192.0.2.1');
    expect(literalIp('[IPv6:2001:DB8::1]')).toBe('2001:db8::1');
    expect(literalIp('example.com')).toBeUndefined();
  });

  it('normalizes each type, explaining a refusal', () => {
    expect(normalizeFilterValue('email', 'Ann@Bücher.de')).toEqual({
      ok: true,
      value: 'ann@xn--bcher-kva.de',
    });
    expect(normalizeFilterValue('domain', '@EXAMPLE.org')).toEqual({
      ok: true,
      value: 'example.org',
    });
    const refused = normalizeFilterValue('ip_address', 'ten.0.0.0/8');
    expect(refused.ok).toBe(false);
  });
});
