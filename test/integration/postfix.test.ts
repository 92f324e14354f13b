import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';

/**
 * Verifies addresses for real against Postfix from Debian on loopback, started by
 * scripts/postfix-test-server.sh (which .ci/run calls). Skipped with a notice where that
 * server is not running, except under MAILVERDICT_REQUIRE_POSTFIX=1 (CI), where its absence fails.
 */
const STATE = process.env.MAILVERDICT_POSTFIX_STATE ?? '/tmp/mailverdict-postfix.json';
const required = process.env.MAILVERDICT_REQUIRE_POSTFIX === '1';
const postfix = existsSync(STATE)
  ? (JSON.parse(readFileSync(STATE, 'utf8')) as { host: string; port: number })
  : undefined;

if (postfix === undefined && !required) {
  console.warn(
    `[postfix] skipped: no Postfix test server (${STATE} is missing); start one with scripts/postfix-test-server.sh (Debian, root)`,
  );
}

describe.skipIf(postfix === undefined && !required)('smtp method against Postfix', () => {
  const domains = [
    'example.org',
    'catch-all.org',
    'greylist.org',
    'policy.org',
    'sender-check.org',
  ];
  // postgrey remembers (client, sender, recipient) triplets across runs: a fresh sender each
  // run makes its first attempt a first attempt again.
  const sender = `verify-${Date.now().toString(36)}@example.net`;
  const engine = (mailFrom = sender) =>
    createEngine({
      dns: createMemoryDns(
        Object.fromEntries(domains.map((domain) => [domain, ['mx.mailverdict.test']])),
        { 'mx.mailverdict.test': [postfix?.host ?? '127.0.0.1'] },
      ),
      smtpOptions: {
        port: postfix?.port ?? 25,
        allowPrivateNetworks: true,
        heloName: 'probe.example.net',
        mailFrom,
      },
      // postgrey runs with --delay=1.
      greylistRetryMs: 1_500,
    });

  it('is running (CI requires it)', () => {
    expect(postfix, `${STATE} should describe a running Postfix`).toBeDefined();
  });

  it('reads every mailbox outcome Postfix gives', async () => {
    const verifier = engine();
    const cases: Array<[string, string, string]> = [
      ['ann@example.org', 'deliverable', 'accepted_email'],
      ['bob@example.org', 'undeliverable', 'rejected_email'],
      ['full@example.org', 'risky', 'low_deliverability'],
      ['gone@example.org', 'undeliverable', 'rejected_email'],
      ['whoever@catch-all.org', 'risky', 'low_deliverability'],
    ];
    const verdicts = [];
    for await (const { index, verdict } of verifier.verifyMany(
      cases.map(([address]) => address),
      { method: 'smtp' },
    )) {
      verdicts[index] = verdict;
    }
    expect(verdicts.map((v) => [v.email, v.state, v.reason])).toEqual(cases);
    expect(verdicts[2]?.mailboxFull).toBe(true);
    expect(verdicts[4]?.catchAll).toBe(true);
    expect(verdicts[0]?.catchAll).toBe(false);
  });

  it('a check_recipient_access REJECT (554 5.7.1 Access denied) is policy: risky, never rejected', async () => {
    const verdict = await engine().verify('ann@policy.org', { method: 'smtp' });
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'unavailable_smtp']);
    expect(verdict.riskFactors).not.toContain('smtp_rejected');
  });

  it('reject_unverified_sender refuses OUR sender (5.1.7): risky for a mailbox that exists', async () => {
    // A sender at a domain this Postfix serves, with no such mailbox: its verification fails.
    const verifier = engine(`nobody-${Date.now().toString(36)}@example.org`);
    const verdict = await verifier.verify('ann@sender-check.org', { method: 'smtp' });
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'unavailable_smtp']);
    expect(verdict.riskFactors).not.toContain('smtp_rejected');
  });

  it('reports postgrey greylisting, and passes it when asked to retry', async () => {
    const verifier = engine();
    const address = 'ann@greylist.org';
    const first = await verifier.verify(address, { method: 'smtp' });
    expect([first.state, first.reason]).toEqual(['risky', 'unavailable_smtp']);
    expect(first.riskFactors).toContain('greylisted');
    const retried = await verifier.verify(address, { method: 'smtp', retryGreylisted: true });
    expect([retried.state, retried.reason]).toEqual(['deliverable', 'accepted_email']);
  });
});
