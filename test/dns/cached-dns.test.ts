import { describe, expect, it } from 'vitest';
import { createCachedDns } from '../../src/dns/cached-dns.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import type { Dns, MxAnswer } from '../../src/ports/dns.js';
import { createManualClock } from '../../src/testing.js';
import { gatedDns } from '../helpers/fakes.js';

const RECORDS: MxAnswer = { kind: 'records', hosts: [{ exchange: 'mx.a.io', priority: 10 }] };

describe('cached Dns', () => {
  it('keeps positive answers for their TTL, negative ones for the shorter TTL', async () => {
    const clock = createManualClock(1_000_000);
    const inner = createMemoryDns({ 'a.io': RECORDS });
    const dns = createCachedDns(inner, { clock, ttlMs: 60_000, negativeTtlMs: 5_000 });
    await dns.mx('a.io');
    await dns.mx('gone.io');
    clock.advance(4_999);
    await dns.mx('a.io');
    await dns.mx('gone.io');
    expect(inner.queries).toEqual(['a.io', 'gone.io']);
    clock.advance(2);
    await dns.mx('gone.io');
    await dns.mx('a.io');
    expect(inner.queries).toEqual(['a.io', 'gone.io', 'gone.io']);
    clock.advance(60_000);
    await dns.mx('a.io');
    expect(inner.queries).toEqual(['a.io', 'gone.io', 'gone.io', 'a.io']);
  });

  it('keeps failures only briefly', async () => {
    const clock = createManualClock(1_000_000);
    const inner = createMemoryDns({ 'down.io': { kind: 'failure', code: 'servfail' } });
    const dns = createCachedDns(inner, { clock, failureTtlMs: 1_000 });
    await dns.mx('down.io');
    await dns.mx('down.io');
    clock.advance(1_001);
    await dns.mx('down.io');
    expect(inner.queries).toEqual(['down.io', 'down.io']);
  });

  it('shares one query among concurrent lookups (single-flight)', async () => {
    const inner = gatedDns({ 'a.io': RECORDS });
    const dns = createCachedDns(inner);
    const lookups = Array.from({ length: 50 }, () => dns.mx('A.io'));
    inner.open();
    const answers = await Promise.all(lookups);
    expect(inner.asked).toEqual(['a.io']);
    expect(answers.every((a) => a === answers[0])).toBe(true);
  });

  it('lets one caller abort without failing the others', async () => {
    const inner = gatedDns({ 'a.io': RECORDS });
    const dns = createCachedDns(inner);
    const controller = new AbortController();
    const aborted = dns.mx('a.io', controller.signal);
    const other = dns.mx('a.io');
    controller.abort(new Error('gave up'));
    await expect(aborted).rejects.toThrow('gave up');
    inner.open();
    expect(await other).toEqual(RECORDS);
  });

  it('shares and keeps mail host addresses too, an empty answer only briefly', async () => {
    const clock = createManualClock(1_000_000);
    const asked: string[] = [];
    const inner: Dns = {
      mx: () => Promise.resolve({ kind: 'nxdomain' }),
      addresses(host) {
        asked.push(host);
        return Promise.resolve(host === 'mx.a.io' ? ['192.0.2.25'] : []);
      },
    };
    const dns = createCachedDns(inner, { clock, ttlMs: 60_000, failureTtlMs: 1_000 });
    const lookups = await Promise.all([dns.addresses!('mx.a.io'), dns.addresses!('MX.a.io')]);
    expect(lookups).toEqual([['192.0.2.25'], ['192.0.2.25']]);
    await dns.addresses!('gone.a.io');
    clock.advance(1_001);
    await dns.addresses!('mx.a.io');
    await dns.addresses!('gone.a.io');
    expect(asked).toEqual(['mx.a.io', 'gone.a.io', 'gone.a.io']);
  });
});
