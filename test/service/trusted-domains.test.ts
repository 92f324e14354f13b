import { describe, expect, it } from 'vitest';
import {
  canonicalTrustedDomain,
  originTrusted,
  requestOrigin,
} from '../../src/service/trusted-domains.js';

/** A page served over https from `host`. */
const https = (host: string) => ({ host, secure: true });
/** Each `host` of a page as trusted by `patterns`. */
const hostTrusted = (host: string, patterns: readonly string[]) =>
  originTrusted(https(host), patterns);

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

  it('reads the page from Origin, else Referer, http(s) only', () => {
    expect(requestOrigin('https://Shop.Example.com:8443', undefined)).toEqual(
      https('shop.example.com'),
    );
    expect(requestOrigin(null, 'https://a.example.com./path')).toEqual(https('a.example.com'));
    expect(requestOrigin(null, 'http://b.example.com/')).toEqual({
      host: 'b.example.com',
      secure: false,
    });
    expect(requestOrigin('chrome-extension://abc', undefined)).toBeUndefined();
    expect(requestOrigin(undefined, undefined)).toBeUndefined();
  });

  it('takes an Origin as it is: null (a sandboxed or data: page) is no page, whatever the Referer', () => {
    // It fell back to the Referer, deliberately changed: the Origin is the browser's word.
    expect(requestOrigin('null', 'https://b.example.com/')).toBeUndefined();
    expect(requestOrigin('chrome-extension://abc', 'https://b.example.com/')).toBeUndefined();
  });

  it('trusts an http page only under a pattern written with http://', () => {
    expect(canonicalTrustedDomain('https://Shop.Example.com/')).toBe('shop.example.com');
    expect(canonicalTrustedDomain('HTTP://shop.example.com')).toBe('http://shop.example.com');
    expect(canonicalTrustedDomain('http://*.example.com')).toBe('http://*.example.com');
    for (const pattern of ['ftp://shop.example.com', 'http://', 'http://com', 'http://x/y']) {
      expect(canonicalTrustedDomain(pattern), pattern).toBeUndefined();
    }
    const page = (secure: boolean) => ({ host: 'shop.example.com', secure });
    expect(originTrusted(page(false), ['shop.example.com'])).toBe(false);
    expect(originTrusted(page(false), ['*.example.com'])).toBe(false);
    expect(originTrusted(page(false), ['http://shop.example.com'])).toBe(true);
    expect(originTrusted(page(false), ['http://*.example.com'])).toBe(true);
    expect(originTrusted(page(true), ['http://shop.example.com'])).toBe(true);
    expect(originTrusted(page(true), ['shop.example.com'])).toBe(true);
    expect(originTrusted(page(false), ['http://other.example.com'])).toBe(false);
  });
});
