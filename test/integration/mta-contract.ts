import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { createEngine } from '../../src/compose/engine.js';
import type { Engine } from '../../src/engine/engine.js';
import type { Verdict } from '../../src/engine/verdict.js';
import { groupAlive, MAIL_WORLD, type MtaQuirks, type TestMta } from '../helpers/mta.js';
import { LOOPBACK_SMTP_OPTIONS } from '../helpers/smtp-server.js';

const MX_HOST = 'mx.mailverdict.test';

interface ProbeOptions {
  /** Default: the server's plain port. */
  readonly port?: number;
  readonly mailFrom?: string;
  /** Opportunistic STARTTLS (the prober's default), or never. */
  readonly startTls?: boolean;
}

/**
 * The same six behaviours asked of every real MTA (test/helpers/mta.ts's MAIL_WORLD): each
 * server's own words, read by the engine through a DNS the test controls. The verdicts are the
 * defensible ones by the engine's principle: a reply judges a mailbox only when it answers RCPT
 * and is about the recipient; anything about us (relay, our sender, TLS) is unknown.
 */
export function mtaContract(
  name: string,
  start: () => Promise<TestMta>,
  quirks: MtaQuirks = {},
): void {
  describe(`smtp method against ${name} on loopback`, () => {
    let mta: TestMta;
    beforeAll(async () => {
      mta = await start();
    });
    afterAll(async () => {
      await mta?.close();
    });
    beforeEach(({ onTestFailed }) => {
      onTestFailed(() => console.error(`--- ${name}'s output\n${mta?.log()}`));
    });

    const engine = ({ port, mailFrom, startTls = true }: ProbeOptions = {}): Engine =>
      createEngine({
        dns: createMemoryDns(
          Object.fromEntries(
            [...MAIL_WORLD.localDomains, MAIL_WORLD.foreignDomain].map((domain) => [
              domain,
              [MX_HOST],
            ]),
          ),
          { [MX_HOST]: ['127.0.0.1'] },
        ),
        smtpOptions: {
          ...LOOPBACK_SMTP_OPTIONS,
          // A real server on a busy 2-core machine can take more than the scripted servers' 1 s.
          commandTimeoutMs: 10_000,
          bannerTimeoutMs: 10_000,
          sessionDeadlineMs: 30_000,
          port: port ?? mta.port,
          mailFrom: mailFrom ?? MAIL_WORLD.sender,
          tls: { startTls },
        },
      });
    const verdictsOf = async (verifier: Engine, addresses: readonly string[]) => {
      const verdicts: Verdict[] = [];
      for (const address of addresses)
        verdicts.push(await verifier.verify(address, { method: 'smtp' }));
      return verdicts;
    };
    const outcome = (verdict: Verdict) => ({
      email: verdict.email,
      state: verdict.state,
      reason: verdict.reason,
      catchAll: verdict.catchAll,
      riskFactors: verdict.riskFactors,
    });
    /** The server answered, and what it said was about us: we could not find out. */
    const expectUnknown = (verdict: Verdict) => {
      expect([verdict.email, verdict.reason]).toEqual([verdict.email, 'unavailable_smtp']);
      expect(verdict.state).not.toBe('undeliverable');
      expect(verdict.riskFactors).not.toContain('smtp_rejected');
    };

    it('accepts a mailbox that exists: deliverable accepted_email, and the domain is no catch-all', async () => {
      const [verdict] = await verdictsOf(engine(), [MAIL_WORLD.mailbox]);
      expect(outcome(verdict as Verdict)).toEqual({
        email: MAIL_WORLD.mailbox,
        state: 'deliverable',
        reason: 'accepted_email',
        catchAll: false,
        riskFactors: [],
      });
    });

    it('refuses an unknown user at RCPT: undeliverable rejected_email', async () => {
      const [verdict] = await verdictsOf(engine(), [MAIL_WORLD.unknownUser]);
      expect(verdict?.email).toBe(MAIL_WORLD.unknownUser);
      expect([verdict?.state, verdict?.reason]).toEqual(['undeliverable', 'rejected_email']);
      expect(verdict?.riskFactors).toContain('smtp_rejected');
    });

    it('accepts every local part of a catch-all domain: risky low_deliverability catch_all', async () => {
      const [verdict] = await verdictsOf(engine(), [MAIL_WORLD.catchAllAddress]);
      expect(outcome(verdict as Verdict)).toEqual({
        email: MAIL_WORLD.catchAllAddress,
        state: 'risky',
        reason: 'low_deliverability',
        catchAll: true,
        riskFactors: ['catch_all'],
      });
    });

    if (quirks.relayRefusedAsUnknownUser === undefined) {
      it('refuses to relay for a domain it does not serve: unknown, never undeliverable', async () => {
        const [verdict] = await verdictsOf(engine(), [MAIL_WORLD.relayed]);
        expectUnknown(verdict as Verdict);
      });
    } else {
      it(`refuses to relay in the words it gives an unknown user (${quirks.relayRefusedAsUnknownUser}): one verdict for both`, async () => {
        const [relayed, unknown] = (
          await verdictsOf(engine(), [MAIL_WORLD.relayed, MAIL_WORLD.unknownUser])
        ).map(outcome);
        expect({ ...relayed, email: '' }).toEqual({ ...unknown, email: '' });
        expect(unknown?.state).toBe('undeliverable');
      });
    }

    it('refuses our sender: unknown for a mailbox that exists and for one that does not', async () => {
      const verdicts = await verdictsOf(engine({ mailFrom: mta.refusedSender }), [
        MAIL_WORLD.mailbox,
        MAIL_WORLD.unknownUser,
      ]);
      for (const verdict of verdicts) expectUnknown(verdict);
    });

    const tlsAddresses = [
      MAIL_WORLD.mailbox,
      MAIL_WORLD.unknownUser,
      MAIL_WORLD.catchAllAddress,
      MAIL_WORLD.relayed,
    ];
    const plainOutcomes = async () => {
      const plain = (await verdictsOf(engine(), tlsAddresses)).map(outcome);
      expect(plain.map(({ state }) => state)).toEqual([
        'deliverable',
        'undeliverable',
        'risky',
        quirks.relayRefusedAsUnknownUser === undefined ? 'risky' : 'undeliverable',
      ]);
      return plain;
    };
    const { tlsHandshakeFails } = quirks;
    if (tlsHandshakeFails === undefined) {
      it('upgrades with STARTTLS to a self-signed certificate, and the verdicts are the plain ones', async () => {
        const plain = await plainOutcomes();
        const overTls = (await verdictsOf(engine({ port: mta.tlsPort }), tlsAddresses)).map(
          outcome,
        );
        expect(overTls).toEqual(plain);
        // The TLS port refuses MAIL FROM before STARTTLS: without the upgrade, nothing above
        // could have been found out there.
        const [refused] = await verdictsOf(engine({ port: mta.tlsPort, startTls: false }), [
          MAIL_WORLD.mailbox,
        ]);
        expectUnknown(refused as Verdict);
      });
    } else {
      it(`offers STARTTLS but fails every handshake (${tlsHandshakeFails.why}): the prober goes on in plain text, with the plain verdicts`, async () => {
        const plain = await plainOutcomes();
        const afterFailedTls = (await verdictsOf(engine({ port: mta.tlsPort }), tlsAddresses)).map(
          outcome,
        );
        expect(afterFailedTls).toEqual(plain);
        expect(mta.log()).toMatch(tlsHandshakeFails.logged);
      });
    }

    it('stops cleanly: no process of the server is left, its directory is removed', async () => {
      const other = await start();
      await other.close();
      expect(groupAlive(other.pid)).toBe(false);
      expect(existsSync(other.dir)).toBe(false);
      expect(await accepts(other.port)).toBe(false);
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
