import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import type { Store } from '../../src/ports/store.js';
import { createService } from '../../src/compose/service.js';
import { type Service } from '../../src/service/service.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';
import { STORES } from '../helpers/service.js';
import { UNKNOWN_REASONS, type Reason } from '../../src/engine/verdict.js';

const DOMAINS = 500;
const SIZE = 50_000;
// Every 10th address repeats the one before it: 45,000 billable, 5,000 free duplicates.
const EMAILS = Array.from({ length: SIZE }, (_, i) =>
  i % 10 === 9
    ? `user${i - 1}@mvtest${(i - 1) % DOMAINS}.com`
    : `user${i}@mvtest${i % DOMAINS}.com`,
);
const BILLABLE = SIZE - SIZE / 10;

let server: TestDnsServer;
beforeAll(async () => {
  const zone: Parameters<typeof startDnsServer>[0] = {};
  // Half the domains have MX records; the other half do not exist (NXDOMAIN: undeliverable).
  for (let d = 0; d < DOMAINS; d += 2) {
    zone[`mvtest${d}.com`] = { mx: [{ exchange: `mx.mvtest${d}.com`, preference: 10 }] };
  }
  server = await startDnsServer(zone);
});
afterAll(() => server.close());

describe.each(STORES)(
  'a 50,000-address quick job against a loopback DNS server (%s)',
  (_name, makeStore) => {
    let service: Service;
    let store: Store;
    let accountId: string;
    let jobId: string;

    beforeAll(async () => {
      store = makeStore();
      service = createService({
        engine: createEngine({
          dnsOptions: { servers: [server.address], timeoutMs: 5_000, tries: 2 },
          dnsCanary: false,
        }),
        store,
      });
      accountId = (await service.admin.createAccount({ email: 'ops@example.org', credits: 60_000 }))
        .id;
      jobId = (await service.submitBatch({ accountId }, { emails: EMAILS, method: 'quick' })).id;
      await service.batchWork.idle();
    }, 120_000);
    afterAll(async () => {
      await service.stop();
      await store.close();
    });

    it('completes with every result, in input order, and the counters agree', async () => {
      const status = await service.batchStatus({ accountId }, jobId);
      expect(status).toMatchObject({ status: 'completed', total_emails: SIZE, processed: SIZE });
      let position = 0;
      let valid = 0;
      let invalid = 0;
      let buffered = '';
      for await (const chunk of await service.batchResults({ accountId }, jobId, {
        format: 'ndjson',
      })) {
        buffered += chunk;
        const lines = buffered.split('\n');
        buffered = lines.pop() as string;
        for (const line of lines) {
          const record = JSON.parse(line) as { email: string; state: string; duplicate?: true };
          expect(record.email).toBe(EMAILS[position]);
          expect(record.duplicate === true).toBe(position % 10 === 9);
          if (record.state === 'deliverable') valid++;
          if (record.state === 'undeliverable') invalid++;
          position++;
        }
      }
      expect(position).toBe(SIZE);
      expect({ valid, invalid }).toEqual({ valid: status.valid, invalid: status.invalid });
      expect(status.valid + status.invalid + status.risky).toBe(SIZE);
      expect(status.valid).toBeGreaterThan(0);
      expect(status.invalid).toBeGreaterThan(0);
    });

    it('settles each billable address exactly once, as the ledger says', async () => {
      // A lookup that timed out (a loaded machine) is a result we could not get: given back,
      // not charged. Every billable address has exactly one entry either way.
      let unverified = 0;
      for await (const record of records(
        await service.batchResults({ accountId }, jobId, { format: 'ndjson' }),
      )) {
        if (record.duplicate !== true && UNKNOWN_REASONS.has(record.reason)) unverified++;
      }
      const entries = await store.ledgerEntries(accountId);
      const items = entries.filter((e) => e.kind === 'settle' || e.kind === 'release');
      const perAddress = items.filter((e) => e.ref.includes(':item:'));
      expect(new Set(perAddress.map((e) => e.ref)).size).toBe(BILLABLE);
      expect(perAddress).toHaveLength(BILLABLE);
      const settled = perAddress.filter((e) => e.kind === 'settle').length;
      expect(settled).toBe(BILLABLE - unverified);
      expect(await store.balance(accountId)).toEqual({
        available: 60_000 - settled,
        reserved: 0,
        used: settled,
        total: 60_000,
      });
      expect(await store.listHolds(accountId)).toEqual([]);
    });

    it.each(['json', 'csv', 'ndjson'] as const)(
      'streams the %s download in chunks no larger than a page',
      async (format) => {
        let chunks = 0;
        let largest = 0;
        let total = 0;
        for await (const chunk of await service.batchResults({ accountId }, jobId, { format })) {
          chunks++;
          largest = Math.max(largest, chunk.length);
          total += chunk.length;
        }
        // 500 records a page, a few hundred bytes each: never the whole download at once.
        expect(chunks).toBeGreaterThanOrEqual(SIZE / 500);
        expect(largest).toBeLessThan(500 * 1_000);
        expect(total).toBeGreaterThan(largest * 50);
      },
    );
  },
);

/** The records of a job's NDJSON download, one at a time. */
async function* records(
  chunks: AsyncIterable<string>,
): AsyncGenerator<{ reason: Reason; duplicate?: true }> {
  let buffered = '';
  for await (const chunk of chunks) {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop() as string;
    for (const line of lines) yield JSON.parse(line) as { reason: Reason; duplicate?: true };
  }
}
