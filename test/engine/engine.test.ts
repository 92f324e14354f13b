import { describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { DomainSet } from '../../src/checks/domain-set.js';
import { disposable } from '../../src/checks/disposable.js';
import { DELIVERABLE_CEILING } from '../../src/engine/score.js';
import { createManualClock } from '../../src/testing.js';

const zones = {
  'acme.io': ['mx1.acme.io', 'mx2.acme.io'],
  'gmail.com': ['gmail-smtp-in.l.google.com'],
  'mailinator.com': ['mail.mailinator.com'],
  'null.io': { kind: 'null_mx' },
  'slow.io': { kind: 'failure', code: 'timeout' },
  'broken.io': { kind: 'failure', code: 'servfail' },
} as const;

function engineWithDns() {
  const dns = createMemoryDns(zones);
  return { dns, engine: createEngine({ dns }) };
}

describe('engine.verify', () => {
  it('gives an ordinary address on a domain with MX a deliverable verdict', async () => {
    const { engine } = engineWithDns();
    const verdict = await engine.verify('Ann.Lee@ACME.io');
    expect(verdict).toMatchObject({
      email: 'Ann.Lee@acme.io',
      state: 'deliverable',
      reason: 'accepted_email',
      score: DELIVERABLE_CEILING.dns,
      method: 'standard',
      user: 'Ann.Lee',
      domain: 'acme.io',
      mxRecord: 'mx1.acme.io',
      mxRecords: ['mx1.acme.io', 'mx2.acme.io'],
      disposable: false,
      role: false,
      free: false,
      noReply: false,
      catchAll: null,
      riskFactors: [],
    });
    expect(verdict.checks.map((c) => c.check)).toEqual([
      'syntax',
      'typo',
      'domain',
      'disposable',
      'mx',
      'role',
      'free_provider',
      'no_reply',
    ]);
    expect(verdict.duration).toBeGreaterThanOrEqual(0);
  });

  it('stops at invalid syntax without any lookup', async () => {
    const { dns, engine } = engineWithDns();
    const verdict = await engine.verify('ann..lee@acme.io');
    expect(verdict).toMatchObject({
      state: 'undeliverable',
      reason: 'invalid_email',
      score: 0,
      email: 'ann..lee@acme.io',
      error: { code: 'consecutive_dots' },
    });
    expect(dns.queries).toEqual([]);
  });

  it('refuses a made-up TLD offline, costing no DNS query', async () => {
    const { dns, engine } = engineWithDns();
    const verdict = await engine.verify('ann@example.notarealtld');
    expect(verdict).toMatchObject({ state: 'undeliverable', reason: 'invalid_domain' });
    expect(verdict.checks.at(-1)).toMatchObject({
      check: 'domain',
      status: 'fail',
      code: 'unknown_tld',
    });
    expect(dns.queries).toEqual([]);
  });

  it('accepts IDN TLDs the public suffix list knows', async () => {
    const engine = createEngine({ offline: true });
    expect(await engine.verify('user@пример.рф')).toMatchObject({ state: 'deliverable' });
    expect(await engine.verify('user@example.中国')).toMatchObject({ state: 'deliverable' });
  });

  it('makes disposable domains and their subdomains risky (low_quality)', async () => {
    const { engine } = engineWithDns();
    expect(await engine.verify('ann@mailinator.com')).toMatchObject({
      state: 'risky',
      reason: 'low_quality',
      disposable: true,
      riskFactors: ['disposable'],
    });
    const offline = createEngine({ offline: true });
    expect(await offline.verify('ann@inbox.mailinator.com')).toMatchObject({
      disposable: true,
      state: 'risky',
    });
  });

  it('lowers the score for role, free and no-reply without changing the state', async () => {
    const { engine } = engineWithDns();
    const plain = await engine.verify('ann@acme.io');
    const role = await engine.verify('Sales+eu@acme.io');
    const free = await engine.verify('ann@gmail.com');
    const noReply = await engine.verify('no-reply.billing@acme.io');
    for (const verdict of [role, free, noReply]) {
      expect(verdict.state).toBe('deliverable');
      expect(verdict.score).toBeLessThan(plain.score);
    }
    expect(role).toMatchObject({ role: true, riskFactors: ['role'] });
    expect(free).toMatchObject({ free: true, riskFactors: ['free'], smtpProvider: 'google' });
    expect(noReply).toMatchObject({ noReply: true, riskFactors: ['no_reply'] });
  });

  it('quick runs no role, free or no-reply check', async () => {
    const { engine } = engineWithDns();
    const verdict = await engine.verify('sales@gmail.com', { method: 'quick' });
    expect(verdict).toMatchObject({ role: null, free: null, noReply: null, riskFactors: [] });
  });

  it('makes mixed-script addresses risky (confusable)', async () => {
    const engine = createEngine({ offline: true });
    expect(await engine.verify('ann@pаypal.com')).toMatchObject({
      state: 'risky',
      reason: 'low_quality',
      riskFactors: ['confusable'],
    });
  });

  it('maps null MX and NXDOMAIN to invalid_domain, timeout and SERVFAIL to risky', async () => {
    const { engine } = engineWithDns();
    expect(await engine.verify('a@null.io')).toMatchObject({
      state: 'undeliverable',
      reason: 'invalid_domain',
      riskFactors: ['null_mx'],
    });
    expect(await engine.verify('a@nowhere.io')).toMatchObject({
      state: 'undeliverable',
      reason: 'invalid_domain',
      riskFactors: ['nxdomain'],
    });
    expect(await engine.verify('a@slow.io')).toMatchObject({ state: 'risky', reason: 'timeout' });
    expect(await engine.verify('a@broken.io')).toMatchObject({
      state: 'risky',
      reason: 'no_connect',
    });
  });

  it('offline: skips mx and caps the score below a DNS-verified one', async () => {
    const offline = await createEngine({ offline: true }).verify('ann@acme.io');
    const online = await engineWithDns().engine.verify('ann@acme.io');
    expect(offline.checks.find((c) => c.check === 'mx')).toMatchObject({
      status: 'skipped',
      code: 'offline',
    });
    expect(offline.state).toBe('deliverable');
    expect(offline.score).toBeLessThan(online.score);
  });

  it.each([
    ['deliverable@example.com', 'deliverable', 'accepted_email'],
    ['UNDELIVERABLE@Example.com', 'undeliverable', 'rejected_email'],
    ['risky@example.com', 'risky', 'low_deliverability'],
  ])(
    'test address %s is %s for every method, without any lookup',
    async (address, state, reason) => {
      const { dns, engine } = engineWithDns();
      for (const method of ['quick', 'standard', 'smtp'] as const) {
        expect(await engine.verify(address, { method })).toMatchObject({
          state,
          reason,
          testAddress: true,
        });
      }
      expect(dns.queries).toEqual([]);
    },
  );

  it('reports costs from the method table', () => {
    const { engine } = engineWithDns();
    expect([engine.cost('quick'), engine.cost('standard'), engine.cost('smtp')]).toEqual([
      1, 2, 10,
    ]);
  });

  it('rejects non-strings and unknown methods with a TypeError', async () => {
    const { engine } = engineWithDns();
    await expect(engine.verify(undefined as unknown as string)).rejects.toThrow(TypeError);
    await expect(engine.verify('a@acme.io', { method: 'deep' as 'quick' })).rejects.toThrow(
      /Unknown method "deep"/,
    );
    await expect(engine.verify('a@acme.io', { method: 'toString' as 'quick' })).rejects.toThrow(
      TypeError,
    );
    expect(() => engine.cost('x' as 'quick')).toThrow(TypeError);
  });

  it('refuses options that are not an object with a TypeError naming the call, not a null dereference', async () => {
    const { engine } = engineWithDns();
    const offline = createEngine({ offline: true });
    for (const options of [null, 'quick', 7, ['quick']]) {
      const wrong = options as unknown as { method: 'quick' };
      await expect(engine.verify('a@acme.io', wrong)).rejects.toThrow(
        /^verify expects its options as an object/,
      );
      expect(() => offline.verifySync('a@acme.io', wrong)).toThrow(
        /^verifySync expects its options as an object/,
      );
      expect(() => engine.verifyMany(['a@acme.io'], wrong)).toThrow(
        /^verifyMany expects its options as an object/,
      );
    }
    // Left out, or undefined, is the defaults.
    expect((await engine.verify('a@acme.io', undefined)).method).toBe('standard');
  });

  it('refuses an unknown parse profile when it is created, not at each verification', () => {
    expect(() => createEngine({ offline: true, parse: { profile: 'rfx' as 'rfc' } })).toThrow(
      /^Unknown parse profile "rfx"/,
    );
  });

  it('rejects with the abort reason when the signal is aborted', async () => {
    const { engine } = engineWithDns();
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(engine.verify('a@acme.io', { signal: controller.signal })).rejects.toThrow('stop');
  });

  it('verifyMany refuses a string or a non-iterable instead of verifying characters', () => {
    const engine = createEngine({ offline: true });
    for (const bad of ['a@b.org', null, undefined, 42, { length: 1, 0: 'a@b.org' }]) {
      expect(() => engine.verifyMany(bad as unknown as string[])).toThrow(
        /verifyMany expects an iterable of address strings/,
      );
    }
    expect(() => engine.verifyMany(new Set(['a@b.org']))).not.toThrow();
  });

  it('answers any string with a verdict, never an exception', async () => {
    const engine = createEngine({ offline: true });
    for (const input of [
      '',
      'x'.repeat(1_000_000),
      '\ud800@x.com',
      'a\u0000b@x.com',
      'a\r\nb@x.com',
      '@@@',
      '\u{10ffff}@\u{10ffff}.com',
    ]) {
      const verdict = await engine.verify(input);
      expect(verdict.state).toBe('undeliverable');
      expect(verdict.reason).toBe('invalid_email');
    }
  });

  it('verifySync answers offline engines synchronously, with the same verdict as verify', async () => {
    const offline = createEngine({ offline: true, clock: createManualClock() });
    for (const address of [
      'ann@acme.io',
      'info@mailinator.com',
      'a..b@x.io',
      'risky@example.com',
    ]) {
      expect(offline.verifySync(address, { method: 'quick' })).toEqual(
        await offline.verify(address, { method: 'quick' }),
      );
    }
    expect(() => offline.verifySync(7 as unknown as string)).toThrow(TypeError);
    expect(() => offline.verifySync('a@acme.io', { method: 'smtp' })).toThrow(TypeError);
    expect(() => engineWithDns().engine.verifySync('a@acme.io')).toThrow(/offline engine/);
  });

  it('measures duration from the first I/O on the injected clock; offline verdicts report 0', async () => {
    let now = 0;
    const clock = { now: () => (now += 250) };
    const engine = createEngine({ dns: createMemoryDns(zones), clock });
    expect((await engine.verify('ann@acme.io')).duration).toBe(0.25);
    expect((await createEngine({ offline: true, clock }).verify('ann@acme.io')).duration).toBe(0);
  });

  it('takes injected list data', async () => {
    const engine = createEngine({
      offline: true,
      checkers: { disposable: disposable(new DomainSet(['acme.io'])) },
    });
    expect(await engine.verify('ann@acme.io')).toMatchObject({ disposable: true });
    expect(await engine.verify('ann@mailinator.com')).toMatchObject({ disposable: false });
  });
});

describe('evidence behind a score', () => {
  // Offline, the score stays below what a DNS-verified address gets (DELIVERABLE_CEILING). A
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

describe('facts of reserved and ISP domains', () => {
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

describe('verdicts are the caller’s own', () => {
  it("changing one test address verdict's risk factors changes no later verdict", async () => {
    const engine = createEngine({ offline: true });
    const first = await engine.verify('risky@example.com');
    (first.riskFactors as string[]).push('scribbled');
    expect((await engine.verify('risky@example.com')).riskFactors).toEqual(['catch_all']);
  });
});
