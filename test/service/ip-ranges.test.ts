import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalIp,
  canonicalRange,
  clientKey,
  containingRanges,
  containingRangesByFamily,
  ipInRange,
  rangeBits,
  rangeHostBits,
} from '../../src/service/ip-ranges.js';
import { rangeShape } from '../../src/store/rules/ip-prefixes.js';
import { fcParams } from '../helpers/fast-check.js';

describe('IP addresses and ranges', () => {
  it('canonicalizes addresses and refuses ambiguous spellings', () => {
    expect(canonicalIp('192.0.2.1')).toBe('192.0.2.1');
    expect(canonicalIp('2001:DB8:0:0:0:0:0:1')).toBe('2001:db8::1');
    expect(canonicalIp('::ffff:192.0.2.1')).toBe('192.0.2.1');
    for (const bad of ['127.1', '0x7f.0.0.1', '192.0.2.256', 'fe80::1%eth0', '', 'example.com']) {
      expect(canonicalIp(bad)).toBeUndefined();
    }
  });

  it('writes a range by its network address, a full-length one as the bare address', () => {
    expect(canonicalRange('10.1.2.3/8')).toBe('10.0.0.0/8');
    expect(canonicalRange('2001:db8:1:2::5/48')).toBe('2001:db8:1::/48');
    expect(canonicalRange('192.0.2.7/32')).toBe('192.0.2.7');
    expect(canonicalRange('::ffff:10.0.0.0/104')).toBe('10.0.0.0/8');
    expect(canonicalRange('0.0.0.0/0')).toBe('0.0.0.0/0');
    for (const bad of ['10.0.0.0/33', '10.0.0.0/', '10.0.0.0/-1', '::/129', '10.0.0.0/8/8']) {
      expect(canonicalRange(bad)).toBeUndefined();
    }
  });

  it('matches addresses against ranges of their own family only', () => {
    expect(ipInRange('10.200.0.1', '10.0.0.0/8')).toBe(true);
    expect(ipInRange('11.0.0.1', '10.0.0.0/8')).toBe(false);
    expect(ipInRange('::ffff:10.0.0.1', '10.0.0.0/8')).toBe(true);
    expect(ipInRange('2001:db8::1', '10.0.0.0/8')).toBe(false);
    expect(ipInRange('192.0.2.7', '192.0.2.7')).toBe(true);
    expect(ipInRange('not an ip', '0.0.0.0/0')).toBe(false);
    expect(rangeBits('10.0.0.0/8')).toBe(8);
    expect(rangeBits('2001:db8::1')).toBe(128);
  });

  it('counts an IPv6 end user by their /64', () => {
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('203.0.113.9')).toBe('203.0.113.9');
    expect(clientKey('junk')).toBeUndefined();
  });
});

describe('ranges found by lookup', () => {
  it('writes the containing range of each prefix length exactly as canonicalRange does', () => {
    // Addresses as any spelling of either family, IPv4-mapped IPv6 included; each is matched
    // in its canonical form (a mapped address as the IPv4 address it carries).
    const anyIp = fc.oneof(
      fc.ipV4(),
      fc.ipV6(),
      fc.ipV4().map((ip) => `::ffff:${ip}`),
    );
    fc.assert(
      fc.property(anyIp, (ip) => {
        const plain = canonicalIp(ip) as string;
        const width = plain.includes(':') ? 128 : 32;
        const prefixes = Array.from({ length: width + 1 }, (_, bits) => bits);
        const ranges = containingRanges(ip, prefixes);
        expect(ranges).toEqual(prefixes.map((bits) => canonicalRange(`${plain}/${bits}`)));
        for (const range of ranges) expect(ipInRange(ip, range)).toBe(true);
      }),
      fcParams({ numRuns: 200 }),
    );
  });

  it('skips prefixes longer than the family and answers nothing for a non-address', () => {
    expect(containingRanges('192.0.2.77', [24, 33, 64, 32])).toEqual([
      '192.0.2.0/24',
      '192.0.2.77',
    ]);
    expect(containingRanges('2001:db8:1:2::9', [64, 128])).toEqual([
      '2001:db8:1:2::/64',
      '2001:db8:1:2::9',
    ]);
    expect(containingRanges('not an ip', [0])).toEqual([]);
  });

  it('takes the prefix lengths of the family of the address, a mapped one as IPv4', () => {
    const prefixes = { v4: [8, 32], v6: [32, 128] };
    expect(containingRangesByFamily('10.1.2.3', prefixes)).toEqual(['10.0.0.0/8', '10.1.2.3']);
    expect(containingRangesByFamily('::ffff:10.1.2.3', prefixes)).toEqual([
      '10.0.0.0/8',
      '10.1.2.3',
    ]);
    expect(containingRangesByFamily('2001:db8::7', prefixes)).toEqual([
      '2001:db8::/32',
      '2001:db8::7',
    ]);
    expect(containingRangesByFamily('junk', prefixes)).toEqual([]);
  });

  it('ranks ranges of both families by how many addresses they hold', () => {
    expect(rangeShape('192.0.2.7')).toEqual({ width: 32, bits: 32 });
    expect(rangeShape('2001:db8::/33')).toEqual({ width: 128, bits: 33 });
    // An IPv4 host is more specific than an IPv6 /33, although 33 > 32.
    expect(rangeHostBits('192.0.2.7')).toBeLessThan(rangeHostBits('2001:db8::/33'));
    expect(rangeHostBits('2001:db8::1')).toBe(0);
    expect(rangeHostBits('10.0.0.0/8')).toBe(24);
  });
});
