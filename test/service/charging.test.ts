// Credits under hostile or unlucky callers (issue 11, defects 1-4 and 10), on
// both stores: each case reproduces the defect as reported against the library API.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { createEngine } from '../../src/compose/engine.js';
import type { Store } from '../../src/ports/store.js';
import { VERIFY_DEADLINE_MS, HOLD_MARGIN_MS } from '../../src/service/charging.js';
import { createService } from '../../src/compose/service.js';
import { type Service } from '../../src/service/service.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { StoreError } from '../../src/store/rules/store-error.js';
import { createManualClock } from '../../src/testing.js';
import { gatedDns } from '../helpers/fakes.js';
import { refusal, storesOnDisk } from '../helpers/service.js';

const dir = mkdtempSync(join(tmpdir(), 'mailverdict-charging-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const STORES = storesOnDisk('charging');

async function withAccount(
  service: Service,
  credits: number,
): Promise<{ accountId: string; used: () => Promise<number> }> {
  const { id } = await service.admin.createAccount({ email: 'ops@example.org', credits });
  return {
    accountId: id,
    used: async () => (await service.admin.getAccount(id)).credits.used,
  };
}

describe.each(STORES)('charging on the %s store', (_name, makeStore) => {
  it('refuses the smtp method on an engine that cannot probe, before reserving anything', async () => {
    const service = createService({ engine: createEngine({ offline: true }), store: makeStore() });
    const { accountId, used } = await withAccount(service, 100);
    const single = await refusal(
      service.verify({ accountId }, 'a@example.org', { method: 'smtp' }),
    );
    expect([single.code, single.status, single.toJSON()]).toMatchObject([
      'invalid_request',
      400,
      { field: 'method' },
    ]);
    const batch = await refusal(
      service.submitBatch({ accountId }, { emails: ['a@example.org'], method: 'smtp' }),
    );
    expect([batch.code, batch.toJSON()]).toMatchObject(['invalid_request', { field: 'method' }]);
    expect(await used()).toBe(0);
    expect((await service.admin.getAccount(accountId)).credits).toMatchObject({
      available: 100,
      reserved: 0,
    });
    await service.store.close();
  });

  it('judges any non-empty string as the engine does: an invalid_email verdict, charged', async () => {
    const engine = createEngine({ offline: true });
    const service = createService({ engine, store: makeStore() });
    const { accountId, used } = await withAccount(service, 100);
    const strings = ['a\u0001b@example.org', 'a\u0000b@example.org', 'a\r\nb@example.org'];
    strings.push(`${'a'.repeat(2000)}@example.org`, 'x'.repeat(1 << 20));
    for (const email of strings) {
      const { verdict, charged } = await service.verify({ accountId }, email, { method: 'quick' });
      const library = engine.verifySync(email, { method: 'quick' });
      expect({ ...verdict, duration: 0 }).toEqual({ ...library, duration: 0 });
      expect([verdict.reason, verdict.email, charged]).toEqual(['invalid_email', email, 1]);
    }
    expect(await used()).toBe(strings.length);
    // No string at all is still a refusal, naming the parameter.
    const empty = await refusal(service.verify({ accountId }, ''));
    expect([empty.code, empty.context.field]).toEqual(['invalid_request', 'email']);
    await service.store.close();
  });

  describe('idempotency keys (defects 1 and 2)', () => {
    it('tells an address holding NUL from another address with a shape', async () => {
      const service = createService({
        engine: createEngine({ offline: true }),
        store: makeStore(),
      });
      const { accountId } = await withAccount(service, 10);
      // Joined by NUL as the parts are, `a` + shape `b` spells what `a<NUL>b` without one does.
      await service.verify({ accountId }, 'a\u0000b', { requestId: 'nul', method: 'quick' });
      const other = await refusal(
        service.verify({ accountId }, 'a', { requestId: 'nul', method: 'quick', shape: 'b' }),
      );
      expect(other.code).toBe('idempotency_conflict');
      await service.store.close();
    });

    it('binds a key to its request: another address or method is 409, never a free verdict', async () => {
      const service = createService({
        engine: createEngine({ offline: true }),
        store: makeStore(),
      });
      const { accountId, used } = await withAccount(service, 2);
      const first = await service.verify({ accountId }, 'a@example.org', { requestId: 'k' });
      expect(first.charged).toBe(2);
      for (let i = 0; i < 3; i++) {
        const conflict = await refusal(
          service.verify({ accountId }, 'other@example.org', { requestId: 'k' }),
        );
        expect([conflict.code, conflict.status]).toEqual(['idempotency_conflict', 409]);
        const method = await refusal(
          service.verify({ accountId }, 'a@example.org', { requestId: 'k', method: 'quick' }),
        );
        expect(method.code).toBe('idempotency_conflict');
      }
      // The same request, even written differently, is answered the first answer.
      const again = await service.verify({ accountId }, 'a@EXAMPLE.org', { requestId: 'k' });
      expect(again).toEqual(JSON.parse(JSON.stringify(first)));
      expect(await used()).toBe(2);
      // With no credits left, a new key is refused: nothing was given away.
      expect(
        (await refusal(service.verify({ accountId }, 'a@example.org', { requestId: 'k2' }))).code,
      ).toBe('insufficient_credits');
      await service.store.close();
    });

    it('scopes keys to the account', async () => {
      const service = createService({
        engine: createEngine({ offline: true }),
        store: makeStore(),
      });
      const a = await withAccount(service, 5);
      const { id: b } = await service.admin.createAccount({ email: 'b@example.org', credits: 5 });
      await service.verify({ accountId: a.accountId }, 'x@example.org', { requestId: 'k' });
      expect(
        (await service.verify({ accountId: b }, 'y@example.org', { requestId: 'k' })).charged,
      ).toBe(2);
      await service.store.close();
    });

    it('answers 409 request_in_progress while the first copy runs, and charges once', async () => {
      const dns = gatedDns({ 'example.org': ['mx.example.org'] });
      const service = createService({ engine: createEngine({ dns }), store: makeStore() });
      const { accountId, used } = await withAccount(service, 40);
      const first = service.verify({ accountId }, 'a@example.org', { requestId: 'k' });
      await new Promise((resolve) => setTimeout(resolve, 20));
      const copies = await Promise.all(
        Array.from({ length: 5 }, () =>
          refusal(service.verify({ accountId }, 'a@example.org', { requestId: 'k' })),
        ),
      );
      expect(copies.map((e) => e.code)).toEqual(Array(5).fill('request_in_progress'));
      dns.open();
      expect((await first).charged).toBe(2);
      expect(await used()).toBe(2);
      expect(
        (await service.verify({ accountId }, 'a@example.org', { requestId: 'k' })).charged,
      ).toBe(2);
      expect(await used()).toBe(2);
      expect((await service.admin.getAccount(accountId)).credits.reserved).toBe(0);
      await service.store.close();
    });

    it('charges once for many concurrent copies of a synchronous verify', async () => {
      const service = createService({
        engine: createEngine({ offline: true }),
        store: makeStore(),
      });
      const { accountId, used } = await withAccount(service, 40);
      const results = await Promise.all(
        Array.from({ length: 20 }, () =>
          service.verify({ accountId }, 'a@example.org', { requestId: 'k', method: 'quick' }),
        ),
      );
      expect(await used()).toBe(1);
      for (const result of results) expect(result.charged).toBe(1);
      await service.store.close();
    });

    it('frees the key of a request that failed before charging', async () => {
      const service = createService({
        engine: createEngine({ offline: true }),
        store: makeStore(),
      });
      const { accountId } = await withAccount(service, 1);
      expect(
        (await refusal(service.verify({ accountId }, 'a@example.org', { requestId: 'k' }))).code,
      ).toBe('insufficient_credits');
      await service.admin.grantCredits(accountId, 5);
      expect(
        (await service.verify({ accountId }, 'a@example.org', { requestId: 'k' })).charged,
      ).toBe(2);
      await service.store.close();
    });

    it('never swallows a ledger failure: charged is what the ledger recorded', async () => {
      const inner = makeStore();
      let failSettle = false;
      const store: Store = {
        ...inner,
        async commitLedger(accountId, commit, at) {
          if (failSettle && commit.requests.some((r) => r.kind === 'settle')) {
            throw new StoreError('busy', 'The database is locked by another connection.');
          }
          return inner.commitLedger(accountId, commit, at);
        },
      };
      const dns = createMemoryDns({ 'example.org': ['mx.example.org'] });
      const service = createService({ engine: createEngine({ dns }), store });
      const { accountId, used } = await withAccount(service, 10);
      failSettle = true;
      const error = await refusal(service.verify({ accountId }, 'a@example.org'));
      expect(error.code).toBe('internal_error');
      expect(await used()).toBe(0);
      failSettle = false;
      expect((await service.verify({ accountId }, 'a@example.org')).charged).toBe(2);
      expect(await used()).toBe(2);
      await inner.close();
    });
  });

  describe("the service's references (defect 3)", () => {
    it('keeps caller ids out of its namespace: no collision, no hold left behind', async () => {
      const dns = createMemoryDns({ 'example.org': ['mx.example.org'] });
      const service = createService({ engine: createEngine({ dns }), store: makeStore() });
      const { accountId, used } = await withAccount(service, 10);
      expect(
        (await service.verify({ accountId }, 'a@example.org', { requestId: 'job:settle' })).charged,
      ).toBe(2);
      expect(
        (await service.verify({ accountId }, 'b@example.org', { requestId: 'job' })).charged,
      ).toBe(2);
      expect(await used()).toBe(4);
      expect(await service.admin.holds(accountId)).toEqual([]);
      expect((await service.admin.getAccount(accountId)).credits.reserved).toBe(0);

      const ledger = await service.admin.ledger(accountId);
      for (const entry of ledger) expect(entry.ref.startsWith('mv:')).toBe(true);
      // A caller may not file references of the service's namespace.
      const own = ledger[1]!.ref;
      for (const attempt of [
        service.admin.applyLedger(accountId, { kind: 'grant', ref: own, amount: 1 }),
        service.admin.grantCredits(accountId, 1, { ref: 'mv:grant:x' }),
        service.admin.refund(accountId, { reservation: own, ref: 'mv:x' }),
      ]) {
        expect((await refusal(attempt)).context).toEqual({ field: 'ref' });
      }
      expect((await service.admin.ledger(accountId)).length).toBe(ledger.length);
      await service.store.close();
    });
  });

  describe('expiring holds (defect 4)', () => {
    it('lists a hold with its expiry; the sweep releases it once expired', async () => {
      const clock = createManualClock(1_800_000_000_000);
      const dns = gatedDns({ 'example.org': ['mx.example.org'] });
      const store = makeStore();
      const service = createService({ engine: createEngine({ dns }), store, clock });
      const { accountId } = await withAccount(service, 10);
      const { secret } = await service.admin.createKey(accountId);
      const caller = await service.authenticate({
        authorization: `Bearer ${secret}`,
        endpoint: 'account',
      });
      const controller = new AbortController();
      // A verify that never comes back, as when its process is killed.
      const lost = service.verify({ accountId }, 'a@example.org', { signal: controller.signal });
      await new Promise((resolve) => setTimeout(resolve, 20));

      const holds = await service.admin.holds(accountId);
      expect(holds).toHaveLength(1);
      expect(holds[0]).toMatchObject({
        held: 2,
        charged: 0,
        expiresAt: clock.now() + VERIFY_DEADLINE_MS.standard + HOLD_MARGIN_MS,
      });
      const { credits } = await service.account(caller);
      expect(credits).toEqual({ available: 8, reserved: 2, used: 0, total: 10 });
      expect(credits.available + credits.reserved + credits.used).toBe(credits.total);

      expect(await service.admin.sweepHolds()).toBe(0); // not expired yet
      clock.advance(VERIFY_DEADLINE_MS.standard + HOLD_MARGIN_MS);
      expect(await service.admin.sweepHolds()).toBe(1);
      expect(await service.admin.holds(accountId)).toEqual([]);
      expect((await service.account(caller)).credits).toEqual({
        available: 10,
        reserved: 0,
        used: 0,
        total: 10,
      });
      const release = (await service.admin.ledger(accountId)).at(-1);
      expect(release).toMatchObject({ kind: 'release', amount: 2, note: 'hold expired' });
      expect(release?.ref.startsWith('mv:expired:')).toBe(true);

      // The lost verify, should it come back after all, charges nothing it no longer holds.
      controller.abort(new Error('gone'));
      await expect(lost).rejects.toThrow('gone');
      expect((await service.admin.getAccount(accountId)).credits.available).toBe(10);
      await store.close();
    });
  });

  describe('bounded balances (defect 10)', () => {
    it('refuses any grant that would take the total past Number.MAX_SAFE_INTEGER', async () => {
      const service = createService({
        engine: createEngine({ offline: true }),
        store: makeStore(),
      });
      const { accountId } = await withAccount(service, 1_000_000_000_000);
      const top = Number.MAX_SAFE_INTEGER;
      // Straight to the edge: grants of the largest amount until one no longer fits.
      let total = 1_000_000_000_000;
      while (total + 1_000_000_000_000 <= top) {
        await service.admin.grantCredits(accountId, 1_000_000_000_000);
        total += 1_000_000_000_000;
      }
      const over = await refusal(service.admin.grantCredits(accountId, 1_000_000_000_000));
      expect([over.code, over.context.field]).toEqual(['invalid_request', 'amount']);
      await service.admin.grantCredits(accountId, top - total);
      expect((await refusal(service.admin.grantCredits(accountId, 1))).code).toBe(
        'invalid_request',
      );
      const { credits } = await service.admin.getAccount(accountId);
      expect(credits).toEqual({ available: top, reserved: 0, used: 0, total: top });
      // Spending still adds up exactly at the edge.
      expect((await service.verify({ accountId }, 'a@example.org')).charged).toBe(2);
      expect((await service.admin.getAccount(accountId)).credits.available).toBe(top - 2);
      await service.store.close();
    }, 60_000);
  });
});

describe('the SQLite store, committing in groups', () => {
  it('decides each commit of a group on its own and answers them once durable', async () => {
    const path = join(dir, `group-${files++}.db`);
    const store = createSqliteStore(path, { holdSweepMs: 0 });
    await store.insertAccount({
      id: 'acct_g',
      email: 'g@example.org',
      plan: 'free',
      billingAnchorDay: 1,
      webhookSecret: 'whsec_x',
      createdAt: 1,
    });
    await store.applyLedger('acct_g', { kind: 'grant', ref: 'g', amount: 5 }, 1);
    // One group: three affordable reserves, two refused, a malformed one, an unknown account.
    const outcomes = await Promise.allSettled([
      ...Array.from({ length: 5 }, (_, i) =>
        store.commitLedger(
          'acct_g',
          { requests: [{ kind: 'reserve', ref: `r${i}`, amount: 2 }] },
          Date.now(),
        ),
      ),
      store.commitLedger('acct_g', { requests: [{ kind: 'grant', ref: 'bad', amount: -1 }] }, 2),
      store.commitLedger('acct_none', { requests: [{ kind: 'grant', ref: 'x', amount: 1 }] }, 2),
    ]);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.ok : 'thrown'))).toEqual([
      true,
      true,
      false,
      false,
      false,
      'thrown',
      'thrown',
    ]);
    // Closing answers what was queued: every accepted commit is on disk once the store closes.
    const pending = store.commitLedger(
      'acct_g',
      { requests: [{ kind: 'grant', ref: 'late', amount: 3 }] },
      3,
    );
    await store.close();
    expect((await pending).ok).toBe(true);
    const reopened = createSqliteStore(path, { holdSweepMs: 0 });
    expect(await reopened.balance('acct_g')).toEqual({
      available: 4,
      reserved: 4,
      used: 0,
      total: 8,
    });
    await reopened.close();
  });
});

describe('the SQLite store at open', () => {
  it('releases holds that expired while no process had the file open', async () => {
    const path = join(dir, `open-sweep-${files++}.db`);
    const first = createSqliteStore(path, { holdSweepMs: 0 });
    const service = createService({ engine: createEngine({ offline: true }), store: first });
    const { accountId } = await withAccount(service, 10);
    await service.admin.applyLedger(accountId, {
      kind: 'reserve',
      ref: 'batch-1',
      amount: 7,
      expiresAt: Date.now() - 1,
    });
    await service.admin.applyLedger(accountId, {
      kind: 'reserve',
      ref: 'batch-2',
      amount: 2,
      expiresAt: Date.now() + 3_600_000,
    });
    await first.close();
    const reopened = createSqliteStore(path, { holdSweepMs: 0 });
    expect((await reopened.listHolds(accountId)).map((hold) => hold.ref)).toEqual(['batch-2']);
    expect(await reopened.balance(accountId)).toEqual({
      available: 8,
      reserved: 2,
      used: 0,
      total: 10,
    });
    await reopened.close();
  });
});
