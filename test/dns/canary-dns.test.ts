import { describe, expect, it } from 'vitest';
import { createCanaryDns } from '../../src/dns/canary-dns.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import type { DnsHealth, MxAnswer } from '../../src/ports/dns.js';
import { createManualClock } from '../../src/testing.js';

const UNRELIABLE: MxAnswer = { kind: 'failure', code: 'unreliable' };

function setup(zones: Parameters<typeof createMemoryDns>[0]) {
  const clock = createManualClock(1_000_000);
  const changes: DnsHealth[] = [];
  const inner = createMemoryDns(zones);
  const dns = createCanaryDns(inner, {
    mustExist: ['big-mail.test'],
    mustNotExist: () => 'surely-not-there.test',
    healthyForMs: 60_000,
    recheckFailedMs: 5_000,
    clock,
    onChange: (health) => changes.push(health),
  });
  return { dns, inner, changes, advance: (ms: number) => clock.advance(ms) };
}

describe('DNS canary', () => {
  it('passes NXDOMAIN through from a truthful resolver, checking it once', async () => {
    const { dns, inner, changes } = setup({ 'big-mail.test': ['mx.big-mail.test'] });
    expect(await dns.mx('gone.test')).toEqual({ kind: 'nxdomain' });
    expect(await dns.mx('gone2.test')).toEqual({ kind: 'nxdomain' });
    expect(dns.health?.().status).toBe('healthy');
    expect(inner.queries.filter((q) => q === 'big-mail.test')).toHaveLength(1);
    expect(changes).toEqual([]);
  });

  it('asks nothing extra while answers are records', async () => {
    const { dns, inner } = setup({
      'big-mail.test': ['mx.big-mail.test'],
      'a.test': ['mx.a.test'],
    });
    expect((await dns.mx('a.test')).kind).toBe('records');
    expect(inner.queries).toEqual(['a.test']);
    expect(dns.health?.()).toEqual({ status: 'unchecked' });
  });

  it('turns NXDOMAIN into unreliable when the resolver denies a name that exists, and says so once', async () => {
    const { dns, changes } = setup({});
    for (let i = 0; i < 20; i++) expect(await dns.mx(`d${i}.test`)).toEqual(UNRELIABLE);
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ status: 'lying', problem: 'denies_existing_names' });
  });

  it('turns implicit MX into unreliable when the resolver answers a name that cannot exist', async () => {
    const { dns, changes } = setup({
      'big-mail.test': ['mx.big-mail.test'],
      'surely-not-there.test': { kind: 'implicit', host: 'surely-not-there.test' },
      'typo.test': { kind: 'implicit', host: 'typo.test' },
    });
    expect(await dns.mx('typo.test')).toEqual(UNRELIABLE);
    expect(changes[0]).toMatchObject({ status: 'lying', problem: 'answers_nonexistent_names' });
  });

  it('checks again after a failure, and reports the recovery once', async () => {
    const { dns, inner, changes, advance } = setup({});
    expect(await dns.mx('gone.test')).toEqual(UNRELIABLE);
    inner.set('big-mail.test', ['mx.big-mail.test']);
    // Within the recheck interval the old verdict on the resolver stands.
    expect(await dns.mx('gone.test')).toEqual(UNRELIABLE);
    advance(5_001);
    expect(await dns.mx('gone.test')).toEqual({ kind: 'nxdomain' });
    expect(changes.map((c) => c.status)).toEqual(['lying', 'healthy']);
  });

  it('calls an unreachable resolver unreachable, not lying, and takes none of its denials as evidence', async () => {
    const { dns, changes } = setup({
      'big-mail.test': { kind: 'failure', code: 'timeout' },
      'gone.test': { kind: 'nxdomain' },
    });
    // Its check got no answer for the name that must exist: not seen truthful (a sandbox
    // dropping queries in bursts and denying the rest), so an NXDOMAIN is no verdict.
    expect(await dns.mx('gone.test')).toEqual(UNRELIABLE);
    expect(dns.health?.().status).toBe('unreachable');
    expect(changes).toEqual([]);
  });

  it('takes denials as evidence again once an unreachable resolver answers its check', async () => {
    const { dns, inner, advance } = setup({
      'big-mail.test': { kind: 'failure', code: 'timeout' },
    });
    expect(await dns.mx('gone.test')).toEqual(UNRELIABLE);
    inner.set('big-mail.test', ['mx.big-mail.test']);
    advance(5_001);
    expect(await dns.mx('gone.test')).toEqual({ kind: 'nxdomain' });
    expect(dns.health?.().status).toBe('healthy');
  });

  it('shares one check among concurrent lookups', async () => {
    const { dns, inner } = setup({ 'big-mail.test': ['mx.big-mail.test'] });
    await Promise.all(Array.from({ length: 30 }, (_, i) => dns.mx(`gone${i}.test`)));
    expect(inner.queries.filter((q) => q === 'big-mail.test')).toHaveLength(1);
  });

  it('checks a no-records answer too: a resolver answering NODATA for every name is lying', async () => {
    const empty: MxAnswer = { kind: 'no_records' };
    const { dns, changes } = setup({ 'big-mail.test': empty, 'gmail.test': empty });
    expect(await dns.mx('gmail.test')).toEqual(UNRELIABLE);
    expect(changes[0]).toMatchObject({ status: 'lying', problem: 'denies_existing_names' });
  });

  it('keeps a no-records answer as evidence from a truthful resolver', async () => {
    const { dns, changes } = setup({
      'big-mail.test': ['mx.big-mail.test'],
      'empty.test': { kind: 'no_records' },
    });
    expect(await dns.mx('empty.test')).toEqual({ kind: 'no_records' });
    expect(dns.health?.().status).toBe('healthy');
    expect(changes).toEqual([]);
  });

  it('keeps a no-records answer as evidence from a resolver that only invents names', async () => {
    // NXDOMAIN rewriting adds addresses; it never hides records a name has.
    const { dns, changes } = setup({
      'big-mail.test': ['mx.big-mail.test'],
      'surely-not-there.test': { kind: 'implicit', host: 'surely-not-there.test' },
      'empty.test': { kind: 'no_records' },
      'typo.test': { kind: 'implicit', host: 'typo.test' },
    });
    expect(await dns.mx('typo.test')).toEqual(UNRELIABLE);
    expect(await dns.mx('empty.test')).toEqual({ kind: 'no_records' });
    expect(changes.map((c) => c.status)).toEqual(['lying']);
  });

  it('counts only the canary names that got an answer: one refused name hides no lie', async () => {
    const inner = createMemoryDns({ 'yahoo.test': { kind: 'failure', code: 'refused' } });
    const dns = createCanaryDns(inner, {
      mustExist: ['gmail.test', 'yahoo.test'],
      mustNotExist: () => 'surely-not-there.test',
      clock: createManualClock(),
    });
    expect(await dns.mx('gmail.test')).toEqual(UNRELIABLE);
    expect(dns.health?.()).toMatchObject({ status: 'lying', problem: 'denies_existing_names' });
  });

  it('announces no recovery, and trusts nothing, when a lying resolver merely stops answering', async () => {
    const { dns, inner, changes, advance } = setup({});
    expect(await dns.mx('gone.test')).toEqual(UNRELIABLE);
    inner.set('big-mail.test', { kind: 'failure', code: 'timeout' });
    advance(5_001);
    // It lied and has not been seen truthful since: its NXDOMAIN is still no evidence.
    expect(await dns.mx('gone.test')).toEqual(UNRELIABLE);
    expect(dns.health?.().status).toBe('lying');
    inner.set('big-mail.test', { kind: 'nxdomain' });
    advance(5_001);
    expect(await dns.mx('gone.test')).toEqual(UNRELIABLE);
    inner.set('big-mail.test', ['mx.big-mail.test']);
    advance(5_001);
    expect(await dns.mx('gone.test')).toEqual({ kind: 'nxdomain' });
    expect(changes.map((c) => c.status)).toEqual(['lying', 'healthy']);
  });
});
