import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { SCORE_BANDS, score } from '../../src/engine/score.js';
import type { RiskFactor } from '../../src/checks/checker.js';
import type { MxAnswer } from '../../src/ports/dns.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import type { ProbeClass } from '../../src/ports/smtp.js';
import { createMemorySmtp } from '../../src/smtp/memory-smtp.js';
import { fcParams } from '../helpers/fast-check.js';

const FACTORS: RiskFactor[] = [
  'disposable',
  'role',
  'free',
  'no_reply',
  'confusable',
  'no_mx',
  'nxdomain',
  'null_mx',
  'catch_all',
  'mailbox_full',
  'smtp_rejected',
  'greylisted',
  'dns_unavailable',
];

const local = fc.constantFrom(
  'john',
  'info',
  'sales',
  'noreply',
  'no-reply+x',
  'pаypal',
  'a..b',
  'Ünïcode',
  'deliverable',
  'risky',
  'undeliverable',
  '',
);
const domain = fc.constantFrom(
  'gmail.com',
  'mailinator.com',
  'x.mailinator.com',
  'acme.io',
  'example.com',
  'example.notarealtld',
  'down.io',
  'slow.io',
  'null.io',
  'bücher.de',
  'nx.io',
);
const answers: Record<string, MxAnswer> = {
  'gmail.com': {
    kind: 'records',
    hosts: [{ exchange: 'gmail-smtp-in.l.google.com', priority: 5 }],
  },
  'mailinator.com': { kind: 'records', hosts: [{ exchange: 'mail.mailinator.com', priority: 10 }] },
  'acme.io': { kind: 'implicit', host: 'acme.io' },
  'down.io': { kind: 'failure', code: 'servfail' },
  'slow.io': { kind: 'failure', code: 'timeout' },
  'null.io': { kind: 'null_mx' },
  'xn--bcher-kva.de': { kind: 'no_records' },
};

describe('scorer and verdict properties', () => {
  it('score() stays in its state band for any start and factors', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('deliverable', 'risky', 'undeliverable' as const),
        fc.integer({ min: -500, max: 500 }),
        fc.array(fc.constantFrom(...FACTORS)),
        (state, start, factors) => {
          const value = score(state, start, factors);
          const [low, high] = SCORE_BANDS[state];
          expect(value).toBeGreaterThanOrEqual(low);
          expect(value).toBeLessThanOrEqual(high);
        },
      ),
      fcParams(),
    );
  });

  it("every verdict's score lies in its state's band, and each method's findings include the cheaper one's", async () => {
    const outcome = fc.constantFrom<ProbeClass>(
      'accepted',
      'rejected',
      'disabled',
      'mailbox_full',
      'greylisted',
      'cannot_verify',
      'blocked',
      'temporary',
      'refused',
      'invalid',
      'no_connect',
      'timeout',
      'smtputf8_unsupported',
      'sender_refused',
      'too_many_recipients',
    );
    await fc.assert(
      fc.asyncProperty(
        local,
        domain,
        fc.boolean(),
        outcome,
        outcome,
        async (user, host, offline, mailbox, probe) => {
          const dns = createMemoryDns(answers);
          // The catch-all probe gets `probe`, the address itself `mailbox`.
          const smtp = createMemorySmtp({
            mailboxes: { [`${user}@${host}`.toLowerCase()]: mailbox },
          });
          const smtpWithProbe = {
            probe: async (...args: Parameters<typeof smtp.probe>) => {
              const report = await smtp.probe(...args);
              const catchAll =
                report.catchAll === null ? null : { ...report.catchAll, class: probe };
              return { ...report, catchAll };
            },
          };
          const engine = createEngine(offline ? { offline: true } : { dns, smtp: smtpWithProbe });
          const address = `${user}@${host}`;
          const quick = await engine.verify(address, { method: 'quick' });
          const standard = await engine.verify(address, { method: 'standard' });
          // An offline engine refuses the smtp method rather than answer it unchecked.
          const full = offline
            ? await engine.verify(address, { method: 'smtp' }).then(
                () => expect.unreachable('an offline engine answered the smtp method'),
                () => standard,
              )
            : await engine.verify(address, { method: 'smtp' });
          for (const finding of standard.checks) expect(full.checks).toContainEqual(finding);
          for (const verdict of [quick, standard, full]) {
            const [low, high] = SCORE_BANDS[verdict.state];
            expect(verdict.score).toBeGreaterThanOrEqual(low);
            expect(verdict.score).toBeLessThanOrEqual(high);
          }
          for (const finding of quick.checks) expect(standard.checks).toContainEqual(finding);
          for (const factor of quick.riskFactors) expect(standard.riskFactors).toContain(factor);
        },
      ),
      fcParams({ numRuns: 300 }),
    );
  });
});
