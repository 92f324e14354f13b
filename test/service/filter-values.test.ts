import { describe, expect, it } from 'vitest';
import { domainChain, normalizeFilterValue } from '../../src/service/filter-values.js';

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
