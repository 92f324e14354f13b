import { describe, expect, it } from 'vitest';
import { resolveClientIp, trustedProxyRanges } from '../../src/http/client-ip.js';

describe('resolveClientIp', () => {
  const proxies = trustedProxyRanges(['10.0.0.0/8', '::1']);

  it('is the peer when no proxy is trusted, whatever X-Forwarded-For says', () => {
    expect(resolveClientIp('10.1.2.3', '203.0.113.9', [])).toBe('10.1.2.3');
    expect(resolveClientIp('192.0.2.1', '203.0.113.9', proxies)).toBe('192.0.2.1');
    expect(resolveClientIp(undefined, '203.0.113.9', proxies)).toBeUndefined();
  });

  it('reads X-Forwarded-For from the right, through trusted proxies only', () => {
    expect(resolveClientIp('10.1.2.3', '203.0.113.9', proxies)).toBe('203.0.113.9');
    // A client's own entries to the left of the first untrusted hop are not believed.
    expect(resolveClientIp('10.1.2.3', '198.51.100.1, 203.0.113.9, 10.9.9.9', proxies)).toBe(
      '203.0.113.9',
    );
    expect(resolveClientIp('::1', '[2001:db8::7]:443', proxies)).toBe('2001:db8::7');
    expect(resolveClientIp('::ffff:10.0.0.1', '203.0.113.9:5555', proxies)).toBe('203.0.113.9');
  });

  it('stops at a garbled hop, keeping the last address it could trust', () => {
    expect(resolveClientIp('10.1.2.3', 'not-an-ip, 10.4.4.4', proxies)).toBe('10.4.4.4');
    expect(resolveClientIp('10.1.2.3', '', proxies)).toBe('10.1.2.3');
  });

  it('refuses a trusted proxy that is no IP range, as a configuration bug', () => {
    expect(() => trustedProxyRanges(['proxy.internal'])).toThrow(TypeError);
  });
});
