import { describe, expect, it } from 'vitest';
import {
  canonicalTrustedDomain,
  hostTrusted,
  requestHost,
} from '../../src/service/trusted-domains.js';

describe('trusted domains of public keys', () => {
  it('normalizes patterns and matches hosts exactly or as subdomains', () => {
    expect(canonicalTrustedDomain('*.Bücher.example')).toBe('*.xn--bcher-kva.example');
    expect(canonicalTrustedDomain('*')).toBeUndefined();
    expect(canonicalTrustedDomain('a.*.example.com')).toBeUndefined();
    expect(hostTrusted('shop.example.com', ['*.example.com'])).toBe(true);
    expect(hostTrusted('example.com', ['*.example.com'])).toBe(false);
    expect(hostTrusted('badexample.com', ['*.example.com'])).toBe(false);
    expect(hostTrusted('example.com', ['example.com'])).toBe(true);
  });

  it('refuses a public suffix, bare or as a wildcard', () => {
    for (const pattern of ['com', '*.com', 'co.uk', '*.co.uk', '*.github.io', 'CO.UK', '*.рф']) {
      expect(canonicalTrustedDomain(pattern)).toBeUndefined();
    }
    // A registrable domain, or a site under a private suffix, is a site of its own.
    expect(canonicalTrustedDomain('example.co.uk')).toBe('example.co.uk');
    expect(canonicalTrustedDomain('*.example.co.uk')).toBe('*.example.co.uk');
    expect(canonicalTrustedDomain('alice.github.io')).toBe('alice.github.io');
    expect(canonicalTrustedDomain('*.пример.рф')).toBe('*.xn--e1afmkfd.xn--p1ai');
  });

  it('trusts nothing under a public-suffix pattern stored before they were refused', () => {
    expect(hostTrusted('evil.com', ['*.com'])).toBe(false);
    expect(hostTrusted('anyone.github.io', ['*.github.io'])).toBe(false);
    expect(hostTrusted('shop.example.com', ['*.com', '*.example.com'])).toBe(true);
  });

  it('reads the page host from Origin, else Referer, http(s) only', () => {
    expect(requestHost('https://Shop.Example.com:8443', undefined)).toBe('shop.example.com');
    expect(requestHost(null, 'https://a.example.com./path')).toBe('a.example.com');
    expect(requestHost('null', 'http://b.example.com/')).toBe('b.example.com');
    expect(requestHost('chrome-extension://abc', undefined)).toBeUndefined();
    expect(requestHost(undefined, undefined)).toBeUndefined();
  });
});
