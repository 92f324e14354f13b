import { describe, expect, it } from 'vitest';
import {
  hashKey,
  issueKey,
  keyKind,
  pooledRandom,
  presentedKey,
  sameHash,
  type RandomBytes,
} from '../../src/service/api-keys.js';

describe('API keys', () => {
  it('issues prefixed base62 keys with at least 160 random bits, stored only as SHA-256', () => {
    const key = issueKey('private');
    expect(key.secret).toMatch(/^mv_sk_[0-9A-Za-z]{32}$/);
    // 32 base62 characters: 32 * log2(62) = 190.5 bits.
    expect(32 * Math.log2(62)).toBeGreaterThanOrEqual(160);
    expect(key.stored).toEqual({
      kind: 'private',
      hash: hashKey(key.secret),
      displayPrefix: key.secret.slice(0, 10),
      lastFour: key.secret.slice(-4),
    });
    expect(JSON.stringify(key.stored)).not.toContain(key.secret.slice(6, 30));
    expect(issueKey('public').secret).toMatch(/^mv_pk_/);
  });

  it('never issues the same key twice in 10,000 draws', () => {
    const seen = new Set(Array.from({ length: 10_000 }, () => issueKey('private').secret));
    expect(seen.size).toBe(10_000);
  });

  it('hands out pooled random bytes once each, in order, refilling when short', () => {
    let next = 0;
    const requests: number[] = [];
    const counting: RandomBytes = (length) => {
      requests.push(length);
      return Uint8Array.from({ length }, () => next++ % 256);
    };
    const pooled = pooledRandom(counting, 10);
    const drawn = [pooled(4), pooled(4), pooled(4), pooled(25)];
    // 4 + 4 from the first pool; 4 does not fit the 2 left, so a fresh pool; 25 goes direct.
    expect(requests).toEqual([10, 10, 25]);
    expect([...(drawn[0] ?? [])]).toEqual([0, 1, 2, 3]);
    expect([...(drawn[1] ?? [])]).toEqual([4, 5, 6, 7]);
    expect([...(drawn[2] ?? [])]).toEqual([10, 11, 12, 13]);
    expect(drawn[3]?.length).toBe(25);
    // A caller writing into its bytes does not change what the next caller gets.
    drawn[2]?.fill(0);
    expect([...pooled(2)]).toEqual([14, 15]);
  });

  it('redraws biased bytes, so every base62 character stays uniform', () => {
    // A source that first returns only bytes >= 248 must still yield a full, valid key.
    let calls = 0;
    const skewed: RandomBytes = (length) => {
      calls++;
      return new Uint8Array(length).fill(calls === 1 ? 250 : 61);
    };
    expect(issueKey('private', skewed).secret).toBe(`mv_sk_${'z'.repeat(32)}`);
  });

  it('hashes with SHA-256 and compares hashes in constant time', () => {
    expect(hashKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sameHash(hashKey('a'), hashKey('a'))).toBe(true);
    expect(sameHash(hashKey('a'), hashKey('b'))).toBe(false);
    expect(sameHash('', '')).toBe(false);
  });

  it('tells the kind of a well-formed key and refuses anything else', () => {
    const key = issueKey('public').secret;
    expect(keyKind(key)).toBe('public');
    expect(keyKind(key.slice(0, -1))).toBeUndefined();
    expect(keyKind(`${key}x`)).toBeUndefined();
    expect(keyKind(key.replace('mv_pk_', 'mv_xx_'))).toBeUndefined();
  });

  it('reads the key from a bearer header first, then from api_key', () => {
    expect(presentedKey('Bearer mv_sk_abc', 'mv_pk_def')).toBe('mv_sk_abc');
    expect(presentedKey('bearer   mv_sk_abc ', null)).toBe('mv_sk_abc');
    expect(presentedKey('Basic dXNlcjpwYXNz', 'mv_pk_def')).toBe('mv_pk_def');
    expect(presentedKey(null, '')).toBeUndefined();
    expect(presentedKey(undefined, undefined)).toBeUndefined();
  });
});
