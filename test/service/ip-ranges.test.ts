import { describe, expect, it } from 'vitest';
import {
  canonicalIp,
  canonicalRange,
  clientKey,
  ipInRange,
  rangeBits,
} from '../../src/service/ip-ranges.js';

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
