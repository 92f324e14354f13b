import { describe, expect, it } from 'vitest';
import { isPublicAddress } from '../../src/smtp/target-policy.js';

describe('isPublicAddress (SSRF guard for MX targets)', () => {
  it.each([
    '8.8.8.8',
    '203.0.114.1',
    '2001:4860:4860::8888',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('allows the global unicast address %s', (address) =>
    expect(isPublicAddress(address)).toBe(true),
  );

  it.each([
    ['loopback', '127.0.0.1'],
    ['loopback v6', '::1'],
    ['RFC 1918', '10.0.0.1'],
    ['RFC 1918', '172.16.5.4'],
    ['RFC 1918', '192.168.1.1'],
    ['CGNAT', '100.64.0.1'],
    ['link-local', '169.254.169.254'],
    ['link-local v6', 'fe80::1'],
    ['unique local v6', 'fd00::1'],
    ['unspecified', '0.0.0.0'],
    ['unspecified v6', '::'],
    ['broadcast', '255.255.255.255'],
    ['multicast', '224.0.0.1'],
    ['documentation', '192.0.2.1'],
    ['documentation v6', '2001:db8::1'],
    ['benchmarking', '198.18.0.1'],
    ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
    ['NAT64 of a private address', '64:ff9b::a00:1'],
    ['6to4 of loopback', '2002:7f00:1::1'],
    ['not an address', 'mx.example.org'],
  ])('refuses %s (%s)', (_kind, address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
});
