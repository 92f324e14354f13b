import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AccountRecord, FilterRecord, KeyRecord, Store } from '../../src/ports/store.js';
import { StoreError } from '../../src/store/rules/store-error.js';
import { batchStoreContract } from './batch-contract.js';

export interface ContractOptions {
  /**
   * The store's rate windows end on a clock the test cannot move (Redis's key expiry, one
   * clock for every process): the window test then waits out a real one-second window instead
   * of moving Date.
   */
  readonly windowsOnStoreClock?: boolean;
}

/**
 * The Store contract: every implementation passes this same suite (test/store/*.test.ts run
 * it on memory, SQLite and Redis).
 */
export function storeContract(
  name: string,
  makeStore: () => Store | Promise<Store>,
  options: ContractOptions = {},
): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await makeStore();
      await store.insertAccount(account('acct_a'));
      await store.insertAccount(account('acct_b'));
    });
    afterEach(async () => {
      vi.useRealTimers();
      await store.close();
    });

    // Batch jobs, results and the webhook outbox (issue 12): batch-contract.ts.
    batchStoreContract(() => store);

    describe('accounts', () => {
      it('stores, reads and updates an account', async () => {
        expect(await store.getAccount('acct_a')).toEqual(account('acct_a'));
        expect(await store.getAccount('acct_none')).toBeUndefined();
        const updated = await store.updateAccount('acct_a', { plan: 'enterprise' });
        expect(updated?.plan).toBe('enterprise');
        expect((await store.getAccount('acct_a'))?.plan).toBe('enterprise');
        expect(await store.updateAccount('acct_none', { plan: 'free' })).toBeUndefined();
      });

      it('lists every account, oldest first', async () => {
        expect((await store.listAccounts()).map((a) => a.id)).toEqual(['acct_a', 'acct_b']);
        expect((await store.listAccounts())[0]).toEqual(account('acct_a'));
      });

      it('refuses a second account with the same id', async () => {
        await expect(store.insertAccount(account('acct_a'))).rejects.toBeInstanceOf(StoreError);
      });
    });

    describe('keys', () => {
      it('finds keys by hash, lists them oldest first, updates them', async () => {
        await store.insertKey(key('key_2', 'acct_a', 'b'.repeat(64), 2));
        await store.insertKey(key('key_1', 'acct_a', 'a'.repeat(64), 1));
        await store.insertKey(key('key_3', 'acct_b', 'c'.repeat(64), 3));
        expect((await store.findKeyByHash('a'.repeat(64)))?.id).toBe('key_1');
        expect(await store.findKeyByHash('d'.repeat(64))).toBeUndefined();
        expect((await store.listKeys('acct_a')).map((k) => k.id)).toEqual(['key_1', 'key_2']);
        const updated = await store.updateKey('key_1', {
          revokedAt: 10,
          allowedIps: ['192.0.2.0/24'],
        });
        expect(updated).toMatchObject({ revokedAt: 10, allowedIps: ['192.0.2.0/24'] });
        expect(await store.getKey('key_1')).toEqual(updated);
        expect(await store.updateKey('key_none', { revokedAt: 1 })).toBeUndefined();
      });

      it('refuses a second key with the same hash', async () => {
        await store.insertKey(key('key_1', 'acct_a', 'a'.repeat(64), 1));
        await expect(
          store.insertKey(key('key_2', 'acct_a', 'a'.repeat(64), 2)),
        ).rejects.toBeInstanceOf(StoreError);
      });
    });

    describe('ledger', () => {
      it('grants, reserves, settles, releases and refunds with balances to match', async () => {
        await ok(store.applyLedger('acct_a', { kind: 'grant', ref: 'g1', amount: 100 }, 1));
        await ok(store.applyLedger('acct_a', { kind: 'reserve', ref: 'r1', amount: 30 }, 2));
        expect(await store.balance('acct_a')).toEqual({
          available: 70,
          reserved: 30,
          used: 0,
          total: 100,
        });
        await ok(
          store.applyLedger(
            'acct_a',
            { kind: 'settle', ref: 's1', reservation: 'r1', amount: 20 },
            3,
          ),
        );
        await ok(
          store.applyLedger(
            'acct_a',
            { kind: 'refund', ref: 'f1', reservation: 'r1', amount: 15 },
            4,
          ),
        );
        // The refund took the 10 still held, then 5 of the 20 charged.
        expect(await store.balance('acct_a')).toEqual({
          available: 85,
          reserved: 0,
          used: 15,
          total: 100,
        });
        const entries = await store.ledgerEntries('acct_a');
        expect(entries.map((e) => [e.kind, e.ref, e.amount, e.delta, e.reservation])).toEqual([
          ['grant', 'g1', 100, 100, null],
          ['reserve', 'r1', 30, -30, 'r1'],
          ['settle', 's1', 20, 0, 'r1'],
          ['refund', 'f1', 15, 15, 'r1'],
        ]);
        expect(entries.reduce((sum, e) => sum + e.delta, 0)).toBe(85);
        expect(await store.ledgerEntries('acct_b')).toEqual([]);
        const page = await store.ledgerEntries('acct_a', { afterSeq: entries[1]!.seq, limit: 1 });
        expect(page.map((e) => e.ref)).toEqual(['s1']);
      });

      it('releases what a reservation still holds', async () => {
        await ok(store.applyLedger('acct_a', { kind: 'grant', ref: 'g1', amount: 10 }, 1));
        await ok(store.applyLedger('acct_a', { kind: 'reserve', ref: 'r1', amount: 10 }, 2));
        await ok(
          store.applyLedger(
            'acct_a',
            { kind: 'settle', ref: 's1', reservation: 'r1', amount: 4 },
            3,
          ),
        );
        const released = await ok(
          store.applyLedger('acct_a', { kind: 'release', ref: 'l1', reservation: 'r1' }, 4),
        );
        expect(released.entry.amount).toBe(6);
        expect(await store.balance('acct_a')).toEqual({
          available: 6,
          reserved: 0,
          used: 4,
          total: 10,
        });
      });

      it('applies a reference once: a retry replays, a different request conflicts', async () => {
        const first = await ok(
          store.applyLedger('acct_a', { kind: 'grant', ref: 'g1', amount: 5 }, 1),
        );
        const again = await ok(
          store.applyLedger('acct_a', { kind: 'grant', ref: 'g1', amount: 5 }, 2),
        );
        expect(again.replayed).toBe(true);
        expect(again.entry).toEqual(first.entry);
        const conflict = await store.applyLedger(
          'acct_a',
          { kind: 'grant', ref: 'g1', amount: 6 },
          3,
        );
        expect(conflict).toMatchObject({ ok: false, code: 'reference_conflict' });
        expect((await store.balance('acct_a')).available).toBe(5);
        // References are per account.
        await ok(store.applyLedger('acct_b', { kind: 'grant', ref: 'g1', amount: 7 }, 4));
        expect((await store.balance('acct_b')).available).toBe(7);
      });

      it('refuses to go below zero, and what a reservation does not hold', async () => {
        await ok(store.applyLedger('acct_a', { kind: 'grant', ref: 'g1', amount: 9 }, 1));
        expect(
          await store.applyLedger('acct_a', { kind: 'reserve', ref: 'r1', amount: 10 }, 2),
        ).toEqual({ ok: false, code: 'insufficient_credits', needed: 10, available: 9 });
        expect(
          await store.applyLedger(
            'acct_a',
            { kind: 'settle', ref: 's1', reservation: 'nope', amount: 1 },
            3,
          ),
        ).toMatchObject({ ok: false, code: 'unknown_reservation' });
        await ok(store.applyLedger('acct_a', { kind: 'reserve', ref: 'r2', amount: 3 }, 4));
        expect(
          await store.applyLedger(
            'acct_a',
            { kind: 'settle', ref: 's2', reservation: 'r2', amount: 4 },
            5,
          ),
        ).toEqual({ ok: false, code: 'exceeds_reservation', limit: 3 });
        // A grant is not a reservation.
        expect(
          await store.applyLedger('acct_a', { kind: 'release', ref: 'l1', reservation: 'g1' }, 6),
        ).toMatchObject({ ok: false, code: 'unknown_reservation' });
        expect(await store.balance('acct_a')).toEqual({
          available: 6,
          reserved: 3,
          used: 0,
          total: 9,
        });
        expect(await store.ledgerEntries('acct_a')).toHaveLength(2);
      });

      it('stores nothing for a malformed request or an unknown account', async () => {
        const bad = [
          { kind: 'grant', ref: 'g', amount: 0 },
          { kind: 'grant', ref: 'g', amount: 1.5 },
          { kind: 'grant', ref: 'g', amount: -3 },
          { kind: 'grant', ref: '', amount: 1 },
          { kind: 'steal', ref: 'g', amount: 1 },
          { kind: 'settle', ref: 'g', amount: 1 },
        ];
        for (const request of bad) {
          await expect(store.applyLedger('acct_a', request as never, 1)).rejects.toMatchObject({
            code: 'invalid',
          });
        }
        await expect(
          store.applyLedger('acct_none', { kind: 'grant', ref: 'g', amount: 1 }, 1),
        ).rejects.toMatchObject({ code: 'not_found' });
        expect(await store.ledgerEntries('acct_a')).toEqual([]);
        expect((await store.balance('acct_a')).total).toBe(0);
      });

      it('lets exactly the affordable reservations of a concurrent burst through', async () => {
        await ok(store.applyLedger('acct_a', { kind: 'grant', ref: 'g1', amount: 25 }, 1));
        const outcomes = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            store.applyLedger('acct_a', { kind: 'reserve', ref: `r${i}`, amount: 1 }, 2),
          ),
        );
        expect(outcomes.filter((o) => o.ok)).toHaveLength(25);
        expect((await store.balance('acct_a')).available).toBe(0);
      });
    });

    describe('ledger commits, holds and idempotency keys', () => {
      const claim = (attempt: string, answer: string | null, leaseUntil: number, fp = 'fp1') => ({
        op: 'claim' as const,
        record: { key: 'k', fingerprint: fp, attempt, answer, leaseUntil },
      });

      it('applies a commit all or none, each request seeing the ones before', async () => {
        await ok(store.applyLedger('acct_a', { kind: 'grant', ref: 'g1', amount: 5 }, 1));
        const both = await ok(
          store.commitLedger(
            'acct_a',
            {
              requests: [
                { kind: 'reserve', ref: 'r1', amount: 3, expiresAt: 100 },
                { kind: 'settle', ref: 's1', reservation: 'r1', amount: 3 },
              ],
            },
            2,
          ),
        );
        expect(both.entries.map((e) => [e.kind, e.ref])).toEqual([
          ['reserve', 'r1'],
          ['settle', 's1'],
        ]);
        expect(both.balance).toEqual({ available: 2, reserved: 0, used: 3, total: 5 });
        // The second request is refused: the first is not written either.
        const refused = await store.commitLedger(
          'acct_a',
          {
            requests: [
              { kind: 'reserve', ref: 'r2', amount: 2 },
              { kind: 'reserve', ref: 'r3', amount: 1 },
            ],
          },
          3,
        );
        expect(refused).toEqual({
          ok: false,
          code: 'insufficient_credits',
          needed: 1,
          available: 0,
        });
        expect(await store.ledgerEntries('acct_a')).toHaveLength(3);
        expect(await store.balance('acct_a')).toEqual({
          available: 2,
          reserved: 0,
          used: 3,
          total: 5,
        });
      });

      it('lists holds with their expiry and sweeps the expired ones', async () => {
        await ok(store.applyLedger('acct_a', { kind: 'grant', ref: 'g1', amount: 10 }, 1));
        await ok(store.applyLedger('acct_b', { kind: 'grant', ref: 'g1', amount: 10 }, 1));
        await ok(
          store.applyLedger('acct_a', { kind: 'reserve', ref: 'r1', amount: 3, expiresAt: 50 }, 2),
        );
        await ok(
          store.applyLedger('acct_a', { kind: 'reserve', ref: 'r2', amount: 2, expiresAt: 20 }, 2),
        );
        await ok(store.applyLedger('acct_b', { kind: 'reserve', ref: 'r1', amount: 4 }, 2));
        await ok(
          store.applyLedger(
            'acct_a',
            { kind: 'settle', ref: 's2', reservation: 'r2', amount: 1 },
            3,
          ),
        );
        expect(await store.listHolds('acct_a')).toEqual([
          { ref: 'r2', held: 1, charged: 1, expiresAt: 20 },
          { ref: 'r1', held: 3, charged: 0, expiresAt: 50 },
        ]);
        // Without an expiry a hold lasts an hour.
        expect(await store.listHolds('acct_b')).toEqual([
          { ref: 'r1', held: 4, charged: 0, expiresAt: 2 + 3_600_000 },
        ]);
        expect(await store.sweep(19)).toBe(0);
        expect(await store.sweep(20)).toBe(1);
        expect(await store.listHolds('acct_a')).toEqual([
          { ref: 'r1', held: 3, charged: 0, expiresAt: 50 },
        ]);
        expect(await store.balance('acct_a')).toEqual({
          available: 6,
          reserved: 3,
          used: 1,
          total: 10,
        });
        const release = (await store.ledgerEntries('acct_a')).at(-1);
        expect(release).toMatchObject({
          kind: 'release',
          ref: 'mv:expired:r2',
          amount: 1,
          reservation: 'r2',
          note: 'hold expired',
          createdAt: 20,
        });
        expect(await store.sweep(3_600_002)).toBe(2);
        expect(await store.listHolds('acct_a')).toEqual([]);
        expect(await store.listHolds('acct_b')).toEqual([]);
        expect(await store.sweep(4_000_000)).toBe(0);
        expect((await store.balance('acct_b')).available).toBe(10);
      });

      it('claims an idempotency key for one attempt, with its answer, for 24 hours', async () => {
        await ok(store.applyLedger('acct_a', { kind: 'grant', ref: 'g1', amount: 10 }, 1));
        await ok(
          store.commitLedger(
            'acct_a',
            {
              requests: [{ kind: 'reserve', ref: 'r1', amount: 2 }],
              idempotency: claim('a1', null, 500),
            },
            100,
          ),
        );
        expect(await store.idempotencyRecord('acct_a', 'k', 100)).toEqual({
          key: 'k',
          fingerprint: 'fp1',
          attempt: 'a1',
          answer: null,
          createdAt: 100,
          leaseUntil: 500,
        });
        expect(await store.idempotencyRecord('acct_b', 'k', 100)).toBeUndefined();
        // Another attempt is refused while the lease runs, and writes nothing.
        const taken = await store.commitLedger(
          'acct_a',
          {
            requests: [{ kind: 'reserve', ref: 'r2', amount: 2 }],
            idempotency: claim('a2', null, 600),
          },
          200,
        );
        expect(taken).toMatchObject({
          ok: false,
          code: 'idempotency_taken',
          record: { attempt: 'a1' },
        });
        expect((await store.balance('acct_a')).reserved).toBe(2);
        // The holder finishes it with its answer.
        await ok(
          store.commitLedger(
            'acct_a',
            {
              requests: [{ kind: 'settle', ref: 's1', reservation: 'r1', amount: 2 }],
              idempotency: claim('a1', '{"charged":2}', 500),
            },
            300,
          ),
        );
        expect(await store.idempotencyRecord('acct_a', 'k', 300)).toMatchObject({
          attempt: 'a1',
          answer: '{"charged":2}',
          createdAt: 100,
        });
        // An answered key stays taken past its lease, until its 24 hours are over.
        expect(
          await store.commitLedger(
            'acct_a',
            { requests: [], idempotency: claim('a3', 'x', 0) },
            10_000,
          ),
        ).toMatchObject({ code: 'idempotency_taken' });
        const day = 86_400_000;
        expect(await store.idempotencyRecord('acct_a', 'k', 100 + day - 1)).toBeDefined();
        expect(await store.idempotencyRecord('acct_a', 'k', 100 + day)).toBeUndefined();
        await store.sweep(100 + day);
        await ok(
          store.commitLedger(
            'acct_a',
            { requests: [], idempotency: claim('a3', 'y', 0, 'fp2') },
            100 + day,
          ),
        );
        expect(await store.idempotencyRecord('acct_a', 'k', 100 + day)).toMatchObject({
          attempt: 'a3',
          fingerprint: 'fp2',
        });
      });

      it('lets the same request take over a running key whose lease ran out; drops on request', async () => {
        await ok(
          store.commitLedger('acct_a', { requests: [], idempotency: claim('a1', null, 50) }, 10),
        );
        expect(
          await store.commitLedger(
            'acct_a',
            { requests: [], idempotency: claim('a2', null, 90, 'fp2') },
            60,
          ),
        ).toMatchObject({ code: 'idempotency_taken' });
        await ok(
          store.commitLedger('acct_a', { requests: [], idempotency: claim('a2', null, 90) }, 60),
        );
        // Only the holder may drop it.
        await ok(
          store.commitLedger(
            'acct_a',
            { requests: [], idempotency: { op: 'drop', key: 'k', attempt: 'a1' } },
            70,
          ),
        );
        expect((await store.idempotencyRecord('acct_a', 'k', 70))?.attempt).toBe('a2');
        await ok(
          store.commitLedger(
            'acct_a',
            { requests: [], idempotency: { op: 'drop', key: 'k', attempt: 'a2' } },
            70,
          ),
        );
        expect(await store.idempotencyRecord('acct_a', 'k', 70)).toBeUndefined();
      });

      it('bounds every balance by Number.MAX_SAFE_INTEGER', async () => {
        const big = 1_000_000_000_000;
        let total = 0;
        for (let i = 0; total + big <= Number.MAX_SAFE_INTEGER; i++, total += big) {
          await ok(store.applyLedger('acct_a', { kind: 'grant', ref: `g${i}`, amount: big }, 1));
        }
        expect(
          await store.applyLedger('acct_a', { kind: 'grant', ref: 'over', amount: big }, 2),
        ).toEqual({
          ok: false,
          code: 'balance_limit',
          limit: Number.MAX_SAFE_INTEGER - total,
        });
        await ok(
          store.applyLedger(
            'acct_a',
            { kind: 'grant', ref: 'last', amount: Number.MAX_SAFE_INTEGER - total },
            3,
          ),
        );
        expect(
          await store.applyLedger('acct_a', { kind: 'grant', ref: 'one', amount: 1 }, 4),
        ).toMatchObject({
          code: 'balance_limit',
          limit: 0,
        });
        expect((await store.balance('acct_a')).total).toBe(Number.MAX_SAFE_INTEGER);
      }, 60_000);
    });

    describe('filters', () => {
      it('inserts, refuses duplicates, pages in a stable order, finds and deletes', async () => {
        for (let i = 0; i < 5; i++) {
          expect(
            await store.insertFilter(filter(`flt_${i}`, 'acct_a', 'domain', `d${i}.test`)),
          ).toBe('inserted');
        }
        expect(await store.insertFilter(filter('flt_x', 'acct_a', 'email', 'a@d0.test'))).toBe(
          'inserted',
        );
        expect(await store.insertFilter(filter('flt_y', 'acct_a', 'domain', 'd3.test'))).toBe(
          'duplicate',
        );
        // Another account may hold the same value.
        expect(await store.insertFilter(filter('flt_z', 'acct_b', 'domain', 'd3.test'))).toBe(
          'inserted',
        );

        const page = await store.listFilters('acct_a', { type: 'domain', offset: 2, limit: 2 });
        expect(page.total).toBe(5);
        expect(page.filters.map((f) => f.id)).toEqual(['flt_2', 'flt_3']);
        const all = await store.listFilters('acct_a', { offset: 0, limit: 100 });
        expect(all.total).toBe(6);
        expect(all.filters.at(-1)).toEqual(filter('flt_x', 'acct_a', 'email', 'a@d0.test'));

        const found = await store.findFilters('acct_a', 'domain', ['d1.test', 'd4.test', 'x.test']);
        expect(found.map((f) => f.id).sort()).toEqual(['flt_1', 'flt_4']);
        expect(await store.findFilters('acct_a', 'email', [])).toEqual([]);
        expect((await store.findFilters('acct_a', 'email')).map((f) => f.id)).toEqual(['flt_x']);
        expect((await store.findFilters('acct_a', 'domain')).map((f) => f.id)).toEqual([
          'flt_0',
          'flt_1',
          'flt_2',
          'flt_3',
          'flt_4',
        ]);

        expect(await store.deleteFilter('acct_b', 'flt_1')).toBe(false);
        expect(await store.deleteFilter('acct_a', 'flt_1')).toBe(true);
        expect(await store.deleteFilter('acct_a', 'flt_1')).toBe(false);
        expect(await store.findFilters('acct_a', 'domain', ['d1.test'])).toEqual([]);
        // Deleting frees the value for a new filter.
        expect(await store.insertFilter(filter('flt_n', 'acct_a', 'domain', 'd1.test'))).toBe(
          'inserted',
        );
      });
    });

    describe('IP filter prefixes', () => {
      it('tells the prefix lengths in use per family, kept with every insert and delete', async () => {
        expect(await store.ipFilterPrefixes('acct_a')).toEqual({ v4: [], v6: [] });
        const values = ['10.0.0.0/8', '192.0.2.7', '198.51.100.0/24', '11.0.0.0/8'];
        const v6 = ['2001:db8::/32', '2001:db8:1::/48', '2001:db8::25'];
        for (const [i, value] of [...values, ...v6].entries()) {
          await store.insertFilter(filter(`flt_${i}`, 'acct_a', 'ip_address', value));
        }
        // A duplicate counts once; other types and other accounts not at all.
        await store.insertFilter(filter('flt_dup', 'acct_a', 'ip_address', '10.0.0.0/8'));
        await store.insertFilter(filter('flt_d', 'acct_a', 'domain', 'a.test'));
        await store.insertFilter(filter('flt_b', 'acct_b', 'ip_address', '203.0.113.0/25'));
        expect(await store.ipFilterPrefixes('acct_a')).toEqual({
          v4: [8, 24, 32],
          v6: [32, 48, 128],
        });
        expect(await store.ipFilterPrefixes('acct_b')).toEqual({ v4: [25], v6: [] });
        // A length stays while one filter still uses it.
        expect(await store.deleteFilter('acct_a', 'flt_0')).toBe(true);
        expect((await store.ipFilterPrefixes('acct_a')).v4).toEqual([8, 24, 32]);
        expect(await store.deleteFilter('acct_a', 'flt_3')).toBe(true);
        expect(await store.deleteFilter('acct_a', 'flt_4')).toBe(true);
        expect(await store.deleteFilter('acct_a', 'flt_dup')).toBe(false);
        expect(await store.ipFilterPrefixes('acct_a')).toEqual({ v4: [24, 32], v6: [48, 128] });
        for (const id of ['flt_1', 'flt_2', 'flt_5', 'flt_6'])
          await store.deleteFilter('acct_a', id);
        expect(await store.ipFilterPrefixes('acct_a')).toEqual({ v4: [], v6: [] });
      });
    });

    describe('rate counters', () => {
      it('counts every hit of a concurrent burst exactly once', async () => {
        const counter = store.rateCounter('contract', 60_000);
        const counts = await Promise.all(Array.from({ length: 30 }, () => counter.hit('k')));
        expect(counts.map((c) => c.count).sort((a, b) => a - b)).toEqual(
          Array.from({ length: 30 }, (_, i) => i + 1),
        );
        expect((await counter.peek('k')).count).toBe(30);
        expect((await counter.peek('other')).count).toBe(0);
        // Counters of the same name and window share their counts.
        expect((await store.rateCounter('contract', 60_000).hit('k')).count).toBe(31);
        expect((await store.rateCounter('different', 60_000).hit('k')).count).toBe(1);
      });

      // One behaviour, two clocks: a store whose windows end on its own server's clock (Redis's
      // key expiry) cannot be moved by the test's fake Date, so it waits out a 1 s window; the
      // others end theirs on the process's clock, which the test sets.
      it('starts a new window when the old one ends', async () => {
        if (options.windowsOnStoreClock === true) {
          const counter = store.rateCounter('window', 1_000);
          const before = Date.now();
          const first = await counter.hit('k');
          expect(first.count).toBe(1);
          expect(first.resetAt).toBeGreaterThan(before);
          expect(first.resetAt).toBeLessThanOrEqual(Date.now() + 1_000);
          const second = await counter.hit('k');
          expect(second.count).toBe(2);
          await new Promise((resolve) => setTimeout(resolve, second.resetAt - Date.now() + 50));
          expect((await counter.hit('k')).count).toBe(1);
          return;
        }
        vi.useFakeTimers({ toFake: ['Date'] });
        vi.setSystemTime(1_700_000_000_000);
        const counter = store.rateCounter('window', 60_000);
        const first = await counter.hit('k');
        expect(first).toEqual({ count: 1, resetAt: 1_700_000_060_000 });
        vi.setSystemTime(1_700_000_059_999);
        expect(await counter.hit('k')).toEqual({ count: 2, resetAt: 1_700_000_060_000 });
        vi.setSystemTime(1_700_000_060_000);
        expect((await counter.hit('k')).count).toBe(1);
      });
    });

    it('refuses to work once closed', async () => {
      await store.close();
      await expect(store.getAccount('acct_a')).rejects.toMatchObject({ code: 'closed' });
    });
  });
}

async function ok<T extends { ok: boolean }>(
  outcome: Promise<T>,
): Promise<Extract<T, { ok: true }>> {
  const resolved = await outcome;
  if (!resolved.ok) throw new Error(`expected success, got ${JSON.stringify(resolved)}`);
  return resolved as Extract<T, { ok: true }>;
}

export function account(id: string): AccountRecord {
  return {
    id,
    email: `${id}@example.org`,
    plan: 'starter',
    billingAnchorDay: 15,
    webhookSecret: 'whsec_dGVzdA==',
    createdAt: 1,
  };
}

function key(id: string, accountId: string, hash: string, createdAt: number): KeyRecord {
  return {
    id,
    accountId,
    kind: 'private',
    hash,
    displayPrefix: 'mv_sk_abcd',
    lastFour: 'wxyz',
    name: null,
    allowedIps: [],
    trustedDomains: [],
    createdAt,
    revokedAt: null,
    expiresAt: null,
  };
}

function filter(
  id: string,
  accountId: string,
  type: FilterRecord['type'],
  value: string,
): FilterRecord {
  return { id, accountId, type, value, action: 'block', reason: null, createdAt: 1 };
}
