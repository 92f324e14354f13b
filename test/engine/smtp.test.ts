import { describe, expect, it } from 'vitest';
import { SMTP_FINDINGS } from '../../src/checks/smtp.js';
import { createEngine } from '../../src/compose/engine.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { batchProbes } from '../../src/engine/probe-batcher.js';
import type { ProbeClass } from '../../src/ports/smtp.js';
import { createMemorySmtp } from '../../src/smtp/memory-smtp.js';
import { createManualClock } from '../../src/testing.js';
import { countingSmtp } from '../helpers/fakes.js';

const dns = () =>
  createMemoryDns({
    'example.org': ['mx1.example.org', 'mx2.example.org'],
    'other.org': ['mx.other.org'],
  });

describe('smtp method: outcomes to verdicts', () => {
  it.each<[ProbeClass, string, string, string | undefined]>([
    ['accepted', 'deliverable', 'accepted_email', undefined],
    ['rejected', 'undeliverable', 'rejected_email', 'smtp_rejected'],
    ['disabled', 'undeliverable', 'rejected_email', 'smtp_rejected'],
    ['smtputf8_unsupported', 'undeliverable', 'rejected_email', 'smtp_rejected'],
    ['mailbox_full', 'risky', 'low_deliverability', 'mailbox_full'],
    ['greylisted', 'risky', 'unavailable_smtp', 'greylisted'],
    ['blocked', 'risky', 'unavailable_smtp', undefined],
    ['cannot_verify', 'risky', 'unavailable_smtp', undefined],
    ['temporary', 'risky', 'unavailable_smtp', undefined],
    ['refused', 'risky', 'unavailable_smtp', undefined],
    ['no_connect', 'risky', 'no_connect', undefined],
    ['timeout', 'risky', 'timeout', undefined],
    ['invalid', 'risky', 'invalid_smtp', undefined],
  ])('%s -> %s %s', async (outcome, state, reason, factor) => {
    const engine = createEngine({
      dns: dns(),
      smtp: createMemorySmtp({ mailboxes: { 'ann@example.org': outcome } }),
    });
    const verdict = await engine.verify('ann@example.org', { method: 'smtp' });
    expect([verdict.state, verdict.reason]).toEqual([state, reason]);
    if (factor !== undefined) expect(verdict.riskFactors).toContain(factor);
    expect(verdict.score).toBeGreaterThanOrEqual(state === 'deliverable' ? 80 : 0);
  });

  it('answers every outcome of SMTP_FINDINGS through the twin, and refuses any other when created', async () => {
    for (const outcome of Object.keys(SMTP_FINDINGS) as ProbeClass[]) {
      const smtp = createMemorySmtp({ domains: { 'EXAMPLE.org': outcome } });
      const verdict = await createEngine({ dns: dns(), smtp }).verify('ann@example.org', {
        method: 'smtp',
      });
      expect(verdict.checks.find((finding) => finding.check === 'smtp')?.code).toBe(
        SMTP_FINDINGS[outcome].code,
      );
    }
    // The README's finding names, a typo, a non-string: a TypeError naming the outcomes.
    for (const [option, outcome, hint] of [
      ['mailboxes', 'mailbox_not_found', '(it is the finding of "rejected")'],
      ['domains', 'temporary_failure', '"too_many_recipients" or "temporary" or "try_next_mx"'],
      ['mailboxes', 'acepted', 'not an outcome;'],
      ['domains', 42, 'is 42, not an outcome;'],
      ['mailboxes', undefined, 'is undefined, not an outcome;'],
    ] as const) {
      const create = () => createMemorySmtp({ [option]: { 'bob@example.org': outcome as never } });
      expect(create).toThrow(TypeError);
      expect(create).toThrow(hint);
      expect(create).toThrow(`the outcomes are ${Object.keys(SMTP_FINDINGS).join(', ')}.`);
    }
  });

  it('matches the addresses and domains of its tables without regard to case', async () => {
    const smtp = createMemorySmtp({
      mailboxes: { 'Ann@Example.org': 'accepted' },
      catchAllDomains: ['Other.ORG'],
    });
    const engine = createEngine({ dns: dns(), smtp });
    expect((await engine.verify('ann@example.org', { method: 'smtp' })).reason).toBe(
      'accepted_email',
    );
    expect((await engine.verify('bob@other.org', { method: 'smtp' })).catchAll).toBe(true);
  });

  it('rates an accepted address on a catch-all domain risky, below a verified one', async () => {
    const engine = createEngine({
      dns: dns(),
      smtp: createMemorySmtp({ catchAllDomains: ['example.org'] }),
    });
    const verdict = await engine.verify('ann@example.org', { method: 'smtp' });
    expect([verdict.state, verdict.reason, verdict.catchAll]).toEqual([
      'risky',
      'low_deliverability',
      true,
    ]);
  });

  it('refuses the smtp method on an engine that cannot probe, and skips the probe for standard', async () => {
    const smtp = createMemorySmtp();
    // An offline engine answering "deliverable" for 10 credits would be a lie it charges for.
    for (const offline of [
      createEngine({ offline: true, smtp }),
      createEngine({ offline: true }),
      createEngine({ dns: dns(), smtp: { offline: true, probe: smtp.probe.bind(smtp) } }),
    ]) {
      await expect(offline.verify('ann@example.org', { method: 'smtp' })).rejects.toThrow(
        /smtp method needs an engine that can reach mail servers/,
      );
      expect(() => offline.verifyMany(['ann@example.org'], { method: 'smtp' })).toThrow(TypeError);
      expect(() => offline.verifySync('ann@example.org', { method: 'smtp' })).toThrow(TypeError);
    }
    const online = createEngine({ dns: dns(), smtp });
    await online.verify('ann@example.org', { method: 'standard' });
    expect(smtp.requests).toHaveLength(0);
  });

  it('refuses a mistyped SMTP proxy when the engine is built, not at its first probe', () => {
    expect(() => createEngine({ smtpOptions: { proxies: ['http://proxy.example:1080'] } })).toThrow(
      TypeError,
    );
    expect(() =>
      createEngine({ smtpOptions: { proxies: ['socks5://user:pass@127.0.0.1:1080'] } }),
    ).not.toThrow();
  });

  it('never probes an address whose domain has no mail host', async () => {
    const smtp = createMemorySmtp();
    const engine = createEngine({ dns: dns(), smtp });
    const verdict = await engine.verify('ann@nowhere.org', { method: 'smtp' });
    expect(verdict.reason).toBe('invalid_domain');
    expect(smtp.requests).toHaveLength(0);
  });

  it('sends the canonical form: A-label domain, NFC local part, MX hosts in order', async () => {
    const smtp = createMemorySmtp();
    const memory = dns();
    memory.set('xn--bcher-kva.de', ['mx.xn--bcher-kva.de']);
    const engine = createEngine({ dns: memory, smtp });
    await engine.verify('Jo\u0308rg@BÜCHER.de', { method: 'smtp' });
    expect(smtp.requests[0]?.recipients).toEqual([
      { address: 'J\u00f6rg@xn--bcher-kva.de', smtpUtf8: true },
    ]);
    await engine.verify('ann@example.org', { method: 'smtp' });
    expect(smtp.requests[1]?.hosts).toEqual(['mx1.example.org', 'mx2.example.org']);
  });
});

describe('probe batching', () => {
  it('turns concurrent verifies of one domain into one probe with one catch-all question', async () => {
    const smtp = createMemorySmtp({ mailboxes: { 'a0@example.org': 'accepted' } });
    const engine = createEngine({ dns: dns(), smtp });
    const addresses = Array.from({ length: 25 }, (_, i) => `a${i}@example.org`);
    const verdicts = await Promise.all(addresses.map((a) => engine.verify(a, { method: 'smtp' })));
    expect(smtp.requests).toHaveLength(1);
    expect(smtp.requests[0]?.recipients).toHaveLength(25);
    expect(smtp.requests[0]?.catchAllProbe?.address).toMatch(/^[a-z\d]{20}@example\.org$/);
    expect(verdicts[0]?.reason).toBe('accepted_email');
    expect(verdicts.slice(1).every((v) => v.reason === 'rejected_email')).toBe(true);
  });

  it('keeps a conclusive catch-all answer for its TTL, on the injected clock', async () => {
    const clock = createManualClock(50_000);
    const smtp = createMemorySmtp({ catchAllDomains: ['example.org'] });
    const batched = batchProbes(smtp, { clock, catchAllTtlMs: 1_000 });
    const ask = () =>
      batched.probe({
        domain: 'example.org',
        hosts: ['mx1.example.org'],
        recipients: [{ address: 'a@example.org', smtpUtf8: false }],
        catchAllProbe: { address: 'zzzzzzzzzzzzzzzzzzzz@example.org', smtpUtf8: false },
      });
    expect((await ask()).catchAll?.class).toBe('accepted');
    clock.set(50_999);
    expect((await ask()).catchAll?.class).toBe('accepted');
    clock.set(51_001);
    await ask();
    const probed = smtp.requests.filter((request) => request.catchAllProbe !== undefined);
    expect(probed).toHaveLength(2);
  });

  it('lets one caller abort without failing the others', async () => {
    const smtp = createMemorySmtp({ mailboxes: { 'b@example.org': 'accepted' } });
    const engine = createEngine({ dns: dns(), smtp });
    const controller = new AbortController();
    const aborted = engine.verify('a@example.org', { method: 'smtp', signal: controller.signal });
    const other = engine.verify('b@example.org', { method: 'smtp' });
    controller.abort(new Error('gave up'));
    await expect(aborted).rejects.toThrow('gave up');
    expect((await other).reason).toBe('accepted_email');
  });
});

describe('verifyMany', () => {
  it('yields every address once with its index, grouped so each domain is probed once', async () => {
    const smtp = createMemorySmtp({ catchAllDomains: ['other.org'] });
    const engine = createEngine({ dns: dns(), smtp });
    const addresses = [
      'a@example.org',
      'x@other.org',
      'b@example.org',
      'not an address',
      'y@other.org',
    ];
    const seen = new Map<number, string>();
    for await (const { index, verdict } of engine.verifyMany(addresses, { method: 'smtp' })) {
      expect(seen.has(index)).toBe(false);
      seen.set(index, verdict.reason);
    }
    expect([...seen.keys()].sort()).toEqual([0, 1, 2, 3, 4]);
    expect(seen.get(3)).toBe('invalid_email');
    expect(seen.get(1)).toBe('low_deliverability');
    expect(smtp.requests.map((r) => r.domain).sort()).toEqual(['example.org', 'other.org']);
  });

  it('refuses non-strings and unknown methods with a TypeError', async () => {
    const engine = createEngine({ offline: true });
    const drain = async (iterable: AsyncIterable<unknown>) => {
      for await (const _ of iterable) void _;
    };
    await expect(drain(engine.verifyMany(['a@example.org', 42 as never]))).rejects.toThrow(
      /index 1/,
    );
    expect(() => engine.verifyMany([], { method: 'deep' as never })).toThrow(TypeError);
  });

  it('stops with the signal', async () => {
    const engine = createEngine({ dns: dns(), smtp: createMemorySmtp() });
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    const run = async () => {
      for await (const _ of engine.verifyMany(['a@example.org'], { signal: controller.signal }))
        void _;
    };
    await expect(run()).rejects.toThrow('stop');
  });
});

describe('smtp method: one session for a domain in verifyMany', () => {
  it("a domain's addresses reach the prober as one probe, even when every slice is spent at once", async () => {
    const addresses = Array.from({ length: 45 }, (_, i) => `u${i}@example.org`);
    const mailboxes = Object.fromEntries(
      addresses.map((address) => [address, 'accepted' as const]),
    );
    const smtp = countingSmtp(createMemorySmtp({ mailboxes }));
    const engine = createEngine({ dns: dns(), smtp });
    let verified = 0;
    // sliceMs 0: the run yields at every clock reading, as on a machine too busy for a slice.
    for await (const { verdict } of engine.verifyMany(addresses, { method: 'smtp', sliceMs: 0 })) {
      if (verdict.state === 'deliverable') verified++;
    }
    expect(verified).toBe(45);
    expect(smtp.calls).toHaveLength(1);
    expect(smtp.calls[0]?.split(',')).toHaveLength(45);
  });
});
