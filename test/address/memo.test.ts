import { describe, expect, it } from 'vitest';
import { boundedMemo } from '../../src/address/memo.js';
import { parseAddress } from '../../src/index.js';

describe('boundedMemo', () => {
  it('computes each key once while it is remembered', () => {
    const calls: string[] = [];
    const upper = boundedMemo((key) => {
      calls.push(key);
      return key.toUpperCase();
    }, 2);
    expect([upper('a'), upper('a'), upper('b'), upper('a')]).toEqual(['A', 'A', 'B', 'A']);
    expect(calls).toEqual(['a', 'b']);
  });

  it('forgets everything when full, so memory stays bounded', () => {
    const calls: string[] = [];
    const same = boundedMemo((key) => {
      calls.push(key);
      return key;
    }, 2);
    for (const key of ['a', 'b', 'c', 'a']) same(key);
    expect(calls).toEqual(['a', 'b', 'c', 'a']);
  });
});

describe('memoized parser steps', () => {
  it('answer the same for a repeated international address as for its first sight', () => {
    for (const input of ['jörg@bücher.de', 'иван@xn--e1afmkfd.xn--p1ai', 'zoë@xn--bcher-kva.de']) {
      const first = parseAddress(input);
      expect(first.ok).toBe(true);
      expect(parseAddress(input)).toEqual(first);
    }
  });

  it('keeps a failure a failure on repeat', () => {
    for (const input of ['a@xn--zz-zzz.de', 'a\u200b@bücher.de']) {
      const first = parseAddress(input);
      expect(first.ok).toBe(false);
      expect(parseAddress(input)).toEqual(first);
    }
  });
});
