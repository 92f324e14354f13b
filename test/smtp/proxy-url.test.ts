import { describe, expect, it } from 'vitest';
import { parseProxyUrl, parseProxyUrls } from '../../src/smtp/proxy-url.js';

describe('parseProxyUrl', () => {
  it('reads host and port, without credentials', () => {
    expect(parseProxyUrl('socks5://10.0.0.5:1080')).toEqual({
      host: '10.0.0.5',
      port: 1080,
      label: 'socks5://10.0.0.5:1080',
    });
  });

  it('reads a host name and an IPv6 literal without its brackets', () => {
    expect(parseProxyUrl('socks5://proxy.example.net:1080').host).toBe('proxy.example.net');
    expect(parseProxyUrl('socks5://[2001:db8::1]:1080').host).toBe('2001:db8::1');
  });

  it('percent-decodes credentials with special characters', () => {
    const spec = parseProxyUrl('socks5://pro%40be:p%3Ass%20w%2Frd%25%C3%A9@127.0.0.1:1080');
    expect(spec.auth).toEqual({ user: 'pro@be', password: 'p:ss w/rd%é' });
    expect(spec.label).toBe('socks5://pro%40be:***@127.0.0.1:1080');
  });

  it.each([
    ['http://127.0.0.1:1080', /scheme 'http:'/],
    ['socks4://127.0.0.1:1080', /scheme 'socks4:'/],
    ['socks5h://127.0.0.1:1080', /scheme 'socks5h:'/],
    ['socks5://127.0.0.1', /no port/],
    ['socks5://:1080', /not a URL|no host/],
    ['socks5://127.0.0.1:0', /port must be/],
    ['socks5://127.0.0.1:70000', /not a URL|port must be/],
    ['socks5://127.0.0.1:1080/path', /no path/],
    ['socks5://127.0.0.1:1080?x=1', /no path/],
    ['socks5://user@127.0.0.1:1080', /password must be/],
    ['socks5://:secret@127.0.0.1:1080', /user must be/],
    ['socks5://u:%E0%A4%A@127.0.0.1:1080', /percent-encoding/],
    [`socks5://u:${'x'.repeat(256)}@127.0.0.1:1080`, /password must be 1-255/],
    ['127.0.0.1:1080', /scheme|not a URL/],
    ['', /not a URL/],
  ])('refuses %s with a TypeError naming it', (text, why) => {
    expect(() => parseProxyUrl(text)).toThrow(TypeError);
    expect(() => parseProxyUrl(text)).toThrow(why);
  });

  it('never puts the password in the message', () => {
    expect(() => parseProxyUrl('socks5://probe:hunter2@127.0.0.1')).toThrow(
      "smtp proxy 'socks5://probe:***@127.0.0.1': no port",
    );
    expect(() => parseProxyUrl('socks5://probe:hunter2@127.0.0.1')).not.toThrow(/hunter2/);
  });
});

describe('parseProxyUrls', () => {
  it('parses each, and the first bad one throws', () => {
    expect(parseProxyUrls(['socks5://a.example:1', 'socks5://b.example:2'])).toHaveLength(2);
    expect(() => parseProxyUrls(['socks5://a.example:1', 'ftp://b.example:2'])).toThrow(
      /ftp:\/\/b\.example:2/,
    );
    expect(() => parseProxyUrls('socks5://a.example:1' as unknown as string[])).toThrow(TypeError);
  });
});
