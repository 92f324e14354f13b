import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fail, pass, risky, skipped, unknown, type Finding } from '../../src/checks/checker.js';
import { FindingPath, outcomeOf } from '../../src/engine/outcome.js';
import { fcParams } from '../helpers/fast-check.js';

// Findings as the built-in checkers hand them out: a few shared objects.
const POOL: readonly Finding[] = [
  pass('syntax'),
  risky('syntax', 'mixed_script', 'confusable'),
  fail('syntax', 'no_at_sign'),
  pass('domain'),
  fail('domain', 'unknown_tld'),
  skipped('mx', 'offline'),
  pass('mx'),
  pass('mx', 'implicit_mx'),
  fail('mx', 'null_mx', 'null_mx'),
  unknown('mx', 'dns_timeout', 'dns_unavailable'),
  pass('disposable'),
  risky('disposable', 'disposable_domain', 'disposable'),
  risky('role', 'role_account', 'role'),
  risky('free_provider', 'free_provider', 'free'),
  risky('no_reply', 'no_reply_address', 'no_reply'),
  pass('smtp', 'accepted'),
  risky('smtp', 'mailbox_full', 'mailbox_full'),
  unknown('smtp', 'greylisted', 'greylisted'),
  risky('catch_all', 'accepts_any_address', 'catch_all'),
  skipped('catch_all', 'not_probed'),
];

const findingLists = fc.array(fc.constantFrom(...POOL), { maxLength: 9 });

function follow(root: FindingPath, findings: readonly Finding[]): FindingPath {
  return findings.reduce((path, finding) => path.followedBy(finding), root);
}

describe('outcomeOf', () => {
  it('scores an offline pass below a DNS pass, and a DNS pass below an SMTP pass', () => {
    const offline = outcomeOf([pass('syntax'), pass('domain'), skipped('mx', 'offline')]);
    const dns = outcomeOf([pass('syntax'), pass('domain'), pass('mx')]);
    const smtp = outcomeOf([pass('syntax'), pass('mx'), pass('smtp', 'accepted')]);
    expect([offline.state, dns.state, smtp.state]).toEqual([
      'deliverable',
      'deliverable',
      'deliverable',
    ]);
    expect(offline.score).toBeLessThan(dns.score);
    expect(dns.score).toBeLessThan(smtp.score);
  });

  it('sets a flag only where its check ran, and lists each factor once', () => {
    const role = risky('role', 'role_account', 'role');
    const outcome = outcomeOf([pass('syntax'), pass('disposable'), role, role]);
    expect(outcome.disposable).toBe(false);
    expect(outcome.role).toBe(true);
    expect(outcome.free).toBeNull();
    expect(outcome.riskFactors).toEqual(['role']);
  });
});

describe('FindingPath', () => {
  it('gives every path the outcome of its findings, however paths interleave', () => {
    fc.assert(
      fc.property(fc.array(findingLists, { minLength: 1, maxLength: 20 }), (lists) => {
        const root = FindingPath.root();
        for (const findings of lists) {
          const path = follow(root, findings);
          expect(path.findings).toEqual(findings);
          expect(path.outcome).toEqual(outcomeOf(findings));
        }
      }),
      fcParams(),
    );
  });

  it('returns the same path, outcome and arrays for the same findings', () => {
    const root = FindingPath.root();
    const findings = [pass('syntax'), risky('role', 'role_account', 'role')];
    const first = follow(root, findings);
    expect(follow(root, findings)).toBe(first);
    expect(first.outcome).toBe(follow(root, findings).outcome);
  });

  it('freezes what verdicts share', () => {
    const { outcome, findings } = follow(FindingPath.root(), [
      pass('syntax'),
      risky('role', 'role_account', 'role'),
    ]);
    expect(Object.isFrozen(outcome)).toBe(true);
    expect(Object.isFrozen(outcome.riskFactors)).toBe(true);
    expect(Object.isFrozen(findings)).toBe(true);
    expect(() => (outcome.riskFactors as string[]).push('free')).toThrow(TypeError);
  });

  it('keeps no more paths than its bound, and answers correctly past it', () => {
    const root = FindingPath.root(3);
    // Fresh findings per call, as a user's checker may make: each is a new path.
    const fresh = Array.from({ length: 10 }, (_, i) => fail('domain', `code_${i}`));
    const paths = fresh.map((finding) => root.followedBy(finding));
    const kept = fresh.filter((finding, i) => root.followedBy(finding) === paths[i]);
    expect(kept).toEqual(fresh.slice(0, 3));
    for (const [i, finding] of fresh.entries()) {
      expect(root.followedBy(finding).outcome).toEqual(outcomeOf([finding]));
      expect(paths[i]?.findings).toEqual([finding]);
    }
  });
});
