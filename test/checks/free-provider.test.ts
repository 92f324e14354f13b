import { describe, expect, it } from 'vitest';
import { freeProvider } from '../../src/checks/free-provider.js';
import { codeOf } from './helpers.js';

describe('free providers', () => {
  const check = freeProvider();

  // Consumer ISP mail often lives under regional or service subdomains of a listed domain:
  // Spectrum's Road Runner (nc.rr.com, tampabay.rr.com), NetEase's and Tencent's VIP mail
  // (vip.163.com, vip.qq.com). Exact matching missed every one of them.
  it.each([
    'ann@gmail.com',
    'ann@GMAIL.COM',
    'ann@nc.rr.com',
    'ann@tampabay.rr.com',
    'ann@vip.163.com',
    'ann@vip.qq.com',
  ])('%s is at a free provider', (address) => {
    expect(codeOf(check, address)).toBe('risky:free_provider');
  });

  it.each(['ann@acme.io', 'ann@notgmail.com', 'ann@gmail.com.acme.io', 'ann@rr.com.acme.io'])(
    '%s is not',
    (address) => {
      expect(codeOf(check, address)).toBe('pass:ok');
    },
  );
});
