import { describe, expect, it } from 'vitest';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { createEngine } from '../../src/compose/engine.js';
import { DELIVERABLE_CEILING } from '../../src/engine/score.js';

describe('audit: evidence behind a score', () => {
  // DESIGN 2.3: offline, "the score is capped below what a DNS-verified address gets". A
  // domain literal names its mail host itself (RFC 5321 4.1.3): the mx check passes without
  // a lookup, which is no DNS evidence, offline or not. It scored 95, as if DNS had answered.
  it('a domain literal, offline, scores as an offline verdict', async () => {
    const engine = createEngine({ offline: true, parse: { profile: 'rfc' } });
    for (const address of ['ann@[192.0.2.1]', 'ann@[IPv6:2001:db8::1]']) {
      const verdict = await engine.verify(address);
      expect(verdict).toMatchObject({ state: 'deliverable', reason: 'accepted_email' });
      expect(verdict.score).toBe(DELIVERABLE_CEILING.offline);
      expect(verdict.score).toBe((await engine.verify('ann@example.org')).score);
    }
  });
});

describe('audit: facts of reserved and ISP domains', () => {
  const engine = createEngine({
    dns: createMemoryDns({
      'example.com': { kind: 'null_mx' },
      'nc.rr.com': ['hd-mx.charter.net'],
    }),
  });

  it('example.com is undeliverable for its null MX, not disposable', async () => {
    expect(await engine.verify('ann@example.com')).toMatchObject({
      state: 'undeliverable',
      reason: 'invalid_domain',
      disposable: false,
      riskFactors: ['null_mx'],
    });
  });

  it('a regional Road Runner mailbox is at a free provider, and POSTMASTER is postmaster', async () => {
    expect(await engine.verify('ann@nc.rr.com')).toMatchObject({
      state: 'deliverable',
      free: true,
      riskFactors: ['free'],
    });
    expect(await engine.verify('POSTMASTER@nc.rr.com')).toMatchObject({
      email: 'postmaster@nc.rr.com',
      user: 'postmaster',
      role: true,
    });
  });
});

describe('audit: verdicts are the caller’s own', () => {
  it("changing one test address verdict's risk factors changes no later verdict", async () => {
    const engine = createEngine({ offline: true });
    const first = await engine.verify('risky@example.com');
    (first.riskFactors as string[]).push('scribbled');
    expect((await engine.verify('risky@example.com')).riskFactors).toEqual(['catch_all']);
  });
});
