import { describe, expect, it } from 'vitest';
import { createCachedDns } from '../../src/dns/cached-dns.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { createManualClock } from '../../src/testing.js';

describe('createManualClock', () => {
  it('stands still until told, then advances and is set', () => {
    const clock = createManualClock(1_000);
    expect([clock.now(), clock.now()]).toEqual([1_000, 1_000]);
    expect(clock.advance(250)).toBe(1_250);
    expect(clock.advance(0)).toBe(1_250);
    expect(clock.now()).toBe(1_250);
    expect(clock.set(500)).toBe(500);
    expect(clock.now()).toBe(500);
  });

  it('starts at the Unix epoch unless told', () => {
    expect(createManualClock().now()).toBe(0);
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY, '5' as unknown as number])(
    'refuses to advance by %s, naming the method',
    (ms) => {
      const clock = createManualClock(1_000);
      expect(() => clock.advance(ms)).toThrow(RangeError);
      expect(() => clock.advance(ms)).toThrow(/advance/);
      expect(clock.now()).toBe(1_000);
    },
  );

  it.each([Number.NaN, Number.NEGATIVE_INFINITY, undefined as unknown as number])(
    'refuses a time of %s',
    (ms) => {
      expect(() => createManualClock(1_000).set(ms)).toThrow(RangeError);
    },
  );

  it('is the clock a port takes: a cached answer expires when the clock passes its TTL', async () => {
    const clock = createManualClock(1_000_000);
    const zones = createMemoryDns({ 'example.org': ['mx.example.org'] });
    const dns = createCachedDns(zones, { clock, ttlMs: 60_000 });
    await dns.mx('example.org');
    clock.advance(60_000);
    await dns.mx('example.org');
    expect(zones.queries).toEqual(['example.org']);
    clock.advance(1);
    await dns.mx('example.org');
    expect(zones.queries).toEqual(['example.org', 'example.org']);
  });
});
