import { describe, expect, it } from 'vitest';
import type { JobRecord, NewJobItem, Store, WebhookMessage } from '../../src/ports/store.js';

/** A processing job of the contract's shape; `overrides` for what a test needs otherwise. */
export const job = (
  id: string,
  accountId: string,
  overrides: Partial<JobRecord> = {},
): JobRecord => ({
  id,
  accountId,
  method: 'quick',
  status: 'processing',
  totalEmails: 5,
  billable: 3,
  cost: 1,
  reservation: `mv:batch:${id}:hold:1`,
  holds: 1,
  callbackUrl: null,
  processed: 0,
  valid: 0,
  invalid: 0,
  risky: 0,
  createdAt: 1000,
  completedAt: null,
  failureReason: null,
  purgeAt: null,
  ...overrides,
});

const record = (email: string) => JSON.stringify({ email, state: 'deliverable' });

// a (billable), b (free: a test address), A again (a duplicate, spelled its own way), c, d
const ITEMS: NewJobItem[] = [
  { email: 'a@x.org', billable: true, duplicateOf: null, result: null },
  {
    email: 'b@x.org',
    billable: false,
    duplicateOf: null,
    result: { record: record('b'), state: 'risky' },
  },
  { email: 'A@x.org', billable: false, duplicateOf: 0, result: null },
  { email: 'c@x.org', billable: true, duplicateOf: null, result: null },
  { email: 'd@x.org', billable: true, duplicateOf: null, result: null },
];

const settle = (jobId: string, position: number) => ({
  kind: 'settle' as const,
  ref: `mv:batch:${jobId}:item:${position}`,
  reservation: `mv:batch:${jobId}:hold:1`,
  amount: 1,
});

/** The batch part of the Store contract, run inside storeContract with accounts acct_a, acct_b. */
export function batchStoreContract(store: () => Store): void {
  describe('batch jobs', () => {
    const create = async (id = 'job_1', credits = 10) => {
      await store().applyLedger('acct_a', { kind: 'grant', ref: `g-${id}`, amount: credits }, 1);
      return store().createJob(
        job(id, 'acct_a'),
        ITEMS,
        {
          requests: [{ kind: 'reserve', ref: `mv:batch:${id}:hold:1`, amount: 3, expiresAt: 5000 }],
        },
        1000,
      );
    };

    it('stores a job with its reserve; free results and their counters at once', async () => {
      const outcome = await create();
      expect(outcome).toMatchObject({ ok: true, job: { processed: 1, risky: 1, valid: 0 } });
      expect(await store().balance('acct_a')).toMatchObject({ available: 7, reserved: 3 });
      expect(await store().getJob('acct_b', 'job_1')).toBeUndefined();
      expect((await store().getJob('acct_a', 'job_1'))?.billable).toBe(3);
      expect((await store().listJobs('processing')).map((j) => j.id)).toEqual(['job_1']);
      expect(await store().pendingJobItems('job_1', -1, 10)).toEqual([
        { position: 0, email: 'a@x.org' },
        { position: 3, email: 'c@x.org' },
        { position: 4, email: 'd@x.org' },
      ]);
      expect(await store().pendingJobItems('job_1', 0, 1)).toEqual([
        { position: 3, email: 'c@x.org' },
      ]);
    });

    it('keeps what a job was decided under, and reads a job stored without it as it was', async () => {
      const decisions = {
        baseUrl: 'https://api.example.com/mv/',
        callbackPolicy: { allowHttp: true, allowPrivateNetworks: false },
      };
      const free = ITEMS.map((item) => ({ ...item, billable: false }));
      const commit = { requests: [] };
      const cases = [
        ['job_d1', decisions],
        ['job_d2', { ...decisions, baseUrl: null }],
        ['job_d3', {}],
      ] as const;
      for (const [id, decided] of cases) {
        const made = job(id, 'acct_a', { reservation: null, holds: 0, billable: 0, ...decided });
        expect(await store().createJob(made, free, commit, 1000)).toMatchObject({ ok: true });
      }
      const read = async (id: string) => {
        const found = await store().getJob('acct_a', id);
        return { baseUrl: found?.baseUrl, callbackPolicy: found?.callbackPolicy };
      };
      expect(await read('job_d1')).toEqual(decisions);
      expect(await read('job_d2')).toEqual({ ...decisions, baseUrl: null });
      // Stored without them (as before they were kept): absent, for the reader to decide.
      expect(await read('job_d3')).toEqual({ baseUrl: undefined, callbackPolicy: undefined });
      const listed = (await store().listJobs('processing')).find((j) => j.id === 'job_d1');
      expect(listed).toMatchObject(decisions);
    });

    it('finds the pending items among given positions, by position', async () => {
      await create();
      await store().recordJobResults(
        'acct_a',
        'job_1',
        [{ position: 3, record: record('c'), state: 'deliverable', ledger: settle('job_1', 3) }],
        1100,
      );
      // 1 is free, 2 a duplicate, 3 has its result, 9 does not exist; 4 is asked twice.
      expect(await store().pendingJobItemsAt('job_1', [4, 1, 2, 3, 0, 9, 4])).toEqual([
        { position: 0, email: 'a@x.org' },
        { position: 4, email: 'd@x.org' },
      ]);
      expect(await store().pendingJobItemsAt('job_1', [])).toEqual([]);
      expect(await store().pendingJobItemsAt('job_none', [0])).toEqual([]);
    });

    it('stores nothing when the reserve is refused', async () => {
      const outcome = await store().createJob(
        job('job_2', 'acct_a'),
        ITEMS,
        { requests: [{ kind: 'reserve', ref: 'mv:batch:job_2:hold:1', amount: 3 }] },
        1000,
      );
      expect(outcome).toMatchObject({ ok: false, code: 'insufficient_credits', needed: 3 });
      expect(await store().getJob('acct_a', 'job_2')).toBeUndefined();
    });

    it('records results with their settles once; duplicates follow; pages in order', async () => {
      await create();
      const first = await store().recordJobResults(
        'acct_a',
        'job_1',
        [{ position: 0, record: record('a'), state: 'deliverable', ledger: settle('job_1', 0) }],
        1100,
      );
      expect(first).toMatchObject({ ok: true, job: { processed: 3, valid: 2, risky: 1 } });
      // A replay of the same position writes nothing and charges nothing.
      const replay = await store().recordJobResults(
        'acct_a',
        'job_1',
        [{ position: 0, record: record('a'), state: 'deliverable', ledger: settle('job_1', 0) }],
        1100,
      );
      expect(replay).toMatchObject({ ok: true, job: { processed: 3 } });
      expect(await store().balance('acct_a')).toMatchObject({ used: 1, reserved: 2 });
      expect(await store().jobResults('job_1', -1, 2)).toEqual([
        { position: 0, input: 'a@x.org', record: record('a'), duplicate: false },
        { position: 1, input: 'b@x.org', record: record('b'), duplicate: false },
      ]);
      expect(await store().jobResults('job_1', 1, 10)).toEqual([
        { position: 2, input: 'A@x.org', record: record('a'), duplicate: true },
      ]);
    });

    it.each([
      ['settles', (position: number) => settle('job_1', position)],
      [
        'releases of all that is left',
        (position: number) => ({
          kind: 'release' as const,
          ref: `mv:batch:job_1:item:${position}`,
          reservation: 'mv:batch:job_1:hold:1',
        }),
      ],
    ])(
      'takes the writes of one call in order: a position given its result earlier is skipped (%s)',
      async (_kind, request) => {
        await create();
        // 0 twice (under another reference the second time), then 2, which repeats 0.
        const outcome = await store().recordJobResults(
          'acct_a',
          'job_1',
          [
            { position: 0, record: record('a'), state: 'deliverable', ledger: request(0) },
            {
              position: 0,
              record: record('a2'),
              state: 'risky',
              ledger: { ...request(0), ref: 'mv:batch:job_1:item:0:again' },
            },
            { position: 2, record: record('a3'), state: 'risky', ledger: request(2) },
          ],
          1100,
        );
        expect(outcome).toMatchObject({
          ok: true,
          job: { processed: 3, valid: 2, risky: 1, invalid: 0 },
        });
        const refs = (await store().ledgerEntries('acct_a')).map((entry) => entry.ref);
        expect(refs.filter((ref) => ref.startsWith('mv:batch:job_1:item:'))).toEqual([
          'mv:batch:job_1:item:0',
        ]);
        expect(await store().jobResults('job_1', -1, 10)).toEqual([
          { position: 0, input: 'a@x.org', record: record('a'), duplicate: false },
          { position: 1, input: 'b@x.org', record: record('b'), duplicate: false },
          { position: 2, input: 'A@x.org', record: record('a'), duplicate: true },
        ]);
      },
    );

    it('writes no result when its ledger request is refused', async () => {
      await create();
      const outcome = await store().recordJobResults(
        'acct_a',
        'job_1',
        [
          { position: 3, record: record('c'), state: 'deliverable', ledger: settle('job_1', 3) },
          {
            position: 4,
            record: record('d'),
            state: 'deliverable',
            ledger: { ...settle('job_1', 4), reservation: 'mv:batch:nope' },
          },
        ],
        1100,
      );
      expect(outcome).toMatchObject({ ok: false, code: 'unknown_reservation' });
      expect((await store().getJob('acct_a', 'job_1'))?.processed).toBe(1);
      expect(await store().balance('acct_a')).toMatchObject({ used: 0, reserved: 3 });
      expect(await store().recordJobResults('acct_b', 'job_1', [], 1100)).toMatchObject({
        ok: false,
        code: 'job_not_found',
      });
    });

    it('refuses a whole flush when one settle asks more than the hold has left', async () => {
      await create();
      const outcome = await store().recordJobResults(
        'acct_a',
        'job_1',
        [
          { position: 0, record: record('a'), state: 'deliverable', ledger: settle('job_1', 0) },
          { position: 3, record: record('c'), state: 'risky', ledger: settle('job_1', 3) },
          {
            position: 4,
            record: record('d'),
            state: 'deliverable',
            ledger: { ...settle('job_1', 4), amount: 2 },
          },
        ],
        1100,
      );
      // The two settles before it left 1 of the 3 held: the limit is what is left then.
      expect(outcome).toEqual({ ok: false, code: 'exceeds_reservation', limit: 1 });
      expect(await store().getJob('acct_a', 'job_1')).toMatchObject({ processed: 1, valid: 0 });
      expect(await store().balance('acct_a')).toEqual({
        available: 7,
        reserved: 3,
        used: 0,
        total: 10,
      });
      expect((await store().jobResults('job_1', -1, 10)).map((row) => row.position)).toEqual([1]);
      expect((await store().pendingJobItems('job_1', -1, 10)).length).toBe(3);
      expect((await store().ledgerEntries('acct_a')).map((entry) => entry.ref)).toEqual([
        'g-job_1',
        'mv:batch:job_1:hold:1',
      ]);
      expect(await store().listHolds('acct_a')).toEqual([
        { ref: 'mv:batch:job_1:hold:1', held: 3, charged: 0, expiresAt: 5000 },
      ]);
    });

    it('files settles and releases as entries; a spent hold leaves the holds', async () => {
      await create();
      const outcome = await store().recordJobResults(
        'acct_a',
        'job_1',
        [
          { position: 0, record: record('a'), state: 'deliverable', ledger: settle('job_1', 0) },
          {
            position: 3,
            record: record('c'),
            state: 'risky',
            ledger: {
              kind: 'release',
              ref: 'mv:batch:job_1:item:3',
              reservation: 'mv:batch:job_1:hold:1',
              amount: 1,
              note: 'unverified',
            },
          },
          // A position twice in one call: the first write is the one stored.
          { position: 3, record: record('x'), state: 'deliverable' },
        ],
        1100,
      );
      expect(outcome).toMatchObject({
        ok: true,
        job: { processed: 4, valid: 2, invalid: 0, risky: 2 },
      });
      expect(await store().balance('acct_a')).toEqual({
        available: 8,
        reserved: 1,
        used: 1,
        total: 10,
      });
      const filed = await store().ledgerEntries('acct_a');
      expect(filed.slice(2).map(({ seq: _, ...entry }) => entry)).toEqual([
        {
          accountId: 'acct_a',
          ref: 'mv:batch:job_1:item:0',
          kind: 'settle',
          amount: 1,
          delta: 0,
          reservation: 'mv:batch:job_1:hold:1',
          note: null,
          createdAt: 1100,
        },
        {
          accountId: 'acct_a',
          ref: 'mv:batch:job_1:item:3',
          kind: 'release',
          amount: 1,
          delta: 1,
          reservation: 'mv:batch:job_1:hold:1',
          note: 'unverified',
          createdAt: 1100,
        },
      ]);
      expect(filed.map((entry) => entry.seq)).toEqual(
        [...filed.map((entry) => entry.seq)].sort((a, b) => a - b),
      );
      expect(await store().jobResults('job_1', 2, 10)).toEqual([
        { position: 3, input: 'c@x.org', record: record('c'), duplicate: false },
      ]);

      await store().recordJobResults(
        'acct_a',
        'job_1',
        [{ position: 4, record: record('d'), state: 'undeliverable', ledger: settle('job_1', 4) }],
        1200,
      );
      expect(await store().listHolds('acct_a')).toEqual([]);
      expect(await store().pendingJobItems('job_1', -1, 10)).toEqual([]);
      expect(await store().getJob('acct_a', 'job_1')).toMatchObject({
        processed: 5,
        invalid: 1,
      });
      expect(await store().balance('acct_a')).toMatchObject({ reserved: 0, used: 2 });
    });

    it('replays a filed reference with the same request; refuses it with another', async () => {
      await create();
      await store().recordJobResults(
        'acct_a',
        'job_1',
        [{ position: 0, record: record('a'), state: 'deliverable', ledger: settle('job_1', 0) }],
        1100,
      );
      const conflict = await store().recordJobResults(
        'acct_a',
        'job_1',
        [
          { position: 3, record: record('c'), state: 'deliverable', ledger: settle('job_1', 3) },
          {
            position: 4,
            record: record('d'),
            state: 'deliverable',
            ledger: { ...settle('job_1', 0), amount: 2 },
          },
        ],
        1200,
      );
      expect(conflict).toMatchObject({
        ok: false,
        code: 'reference_conflict',
        existing: { ref: 'mv:batch:job_1:item:0', kind: 'settle', amount: 1, createdAt: 1100 },
      });
      expect(await store().getJob('acct_a', 'job_1')).toMatchObject({ processed: 3 });
      // Position 4 with position 0's settle as it was filed: its result lands, nothing is charged.
      const replay = await store().recordJobResults(
        'acct_a',
        'job_1',
        [{ position: 4, record: record('d'), state: 'deliverable', ledger: settle('job_1', 0) }],
        1300,
      );
      expect(replay).toMatchObject({ ok: true, job: { processed: 4, valid: 3 } });
      expect(await store().balance('acct_a')).toMatchObject({ reserved: 2, used: 1 });
      expect((await store().ledgerEntries('acct_a')).length).toBe(3);
    });

    it('stores results without a ledger request for a job that holds nothing', async () => {
      await store().applyLedger('acct_a', { kind: 'grant', ref: 'g-free', amount: 1 }, 1);
      await store().createJob(
        job('job_free', 'acct_a', { reservation: null, billable: 0 }),
        ITEMS,
        { requests: [] },
        1000,
      );
      const outcome = await store().recordJobResults(
        'acct_a',
        'job_free',
        [{ position: 0, record: record('a'), state: 'undeliverable' }],
        1100,
      );
      expect(outcome).toMatchObject({ ok: true, job: { processed: 3, invalid: 2, risky: 1 } });
      expect(await store().balance('acct_a')).toMatchObject({ available: 1, used: 0 });
      expect(await store().recordJobResults('acct_b', 'job_free', [], 1100)).toEqual({
        ok: false,
        code: 'job_not_found',
      });
    });

    it('renews a live hold, later only; reholds; finishes once releasing the rest', async () => {
      await create();
      expect(await store().renewHold('acct_a', 'mv:batch:job_1:hold:1', 9000)).toBe(true);
      expect(await store().renewHold('acct_a', 'mv:batch:job_1:hold:1', 2000)).toBe(true);
      expect((await store().listHolds('acct_a'))[0]?.expiresAt).toBe(9000);
      expect(await store().sweep(8999)).toBe(0);
      expect(await store().sweep(9000)).toBe(1);
      expect(await store().renewHold('acct_a', 'mv:batch:job_1:hold:1', 20_000)).toBe(false);

      const reheld = await store().reholdJob(
        'acct_a',
        'job_1',
        { kind: 'reserve', ref: 'mv:batch:job_1:hold:2', amount: 3, expiresAt: 30_000 },
        9001,
      );
      expect(reheld).toMatchObject({
        ok: true,
        job: { reservation: 'mv:batch:job_1:hold:2', holds: 2 },
      });
      const webhook: WebhookMessage = {
        id: 'msg_1',
        accountId: 'acct_a',
        jobId: 'job_1',
        url: 'https://hooks.example.com/',
        payload: '{}',
        status: 'pending',
        attempts: 0,
        nextAttemptAt: 9002,
        lastStatus: null,
        lastError: null,
        createdAt: 9002,
      };
      const finish = {
        status: 'failed',
        completedAt: 9002,
        failureReason: 'test',
        purgeAt: 20_000,
      } as const;
      const finished = await store().finishJob('acct_a', 'job_1', finish, webhook, 9002);
      expect(finished).toMatchObject({
        ok: true,
        job: { status: 'failed', failureReason: 'test' },
      });
      expect(await store().listHolds('acct_a')).toEqual([]);
      expect(await store().balance('acct_a')).toMatchObject({
        available: 10,
        reserved: 0,
        used: 0,
      });
      // Finishing again changes nothing and queues no second webhook.
      await store().finishJob('acct_a', 'job_1', finish, { ...webhook, id: 'msg_2' }, 9003);
      // A finished job takes no more results and no new hold: nothing more is charged for it
      // (a chunk still running elsewhere when it failed), by either path of a store.
      for (const ledger of [
        settle('job_1', 0),
        {
          kind: 'release' as const,
          ref: 'mv:batch:job_1:item:0',
          reservation: 'mv:batch:job_1:hold:2',
        },
      ]) {
        expect(
          await store().recordJobResults(
            'acct_a',
            'job_1',
            [{ position: 0, record: record('a'), state: 'deliverable', ledger }],
            9003,
          ),
        ).toEqual({ ok: false, code: 'job_finished' });
      }
      expect(
        await store().reholdJob(
          'acct_a',
          'job_1',
          { kind: 'reserve', ref: 'mv:batch:job_1:hold:3', amount: 3 },
          9003,
        ),
      ).toEqual({ ok: false, code: 'job_finished' });
      expect(await store().balance('acct_a')).toMatchObject({ available: 10, reserved: 0 });
      expect(await store().jobResults('job_1', -1, 10)).toHaveLength(1); // the free one
      expect((await store().jobWebhooks('job_1')).map((m) => m.id)).toEqual(['msg_1']);

      expect((await store().dueWebhooks(9001, 10)).length).toBe(0);
      expect((await store().dueWebhooks(9002, 10)).map((m) => m.id)).toEqual(['msg_1']);
      await store().updateWebhook('msg_1', {
        status: 'pending',
        attempts: 1,
        nextAttemptAt: 15_000,
        lastStatus: 500,
        lastError: 'HTTP 500',
      });
      expect(await store().dueWebhooks(14_999, 10)).toEqual([]);

      // One lease per due attempt: a second process reading the same row loses the race.
      expect(await store().leaseWebhook('msg_1', 15_000, 30_000)).toBe(true);
      expect(await store().leaseWebhook('msg_1', 15_000, 30_000)).toBe(false);
      expect(await store().dueWebhooks(29_999, 10)).toEqual([]);
      expect((await store().dueWebhooks(30_000, 10)).map((m) => m.id)).toEqual(['msg_1']);
      expect(await store().leaseWebhook('msg_none', 0, 1)).toBe(false);
      await store().updateWebhook('msg_1', {
        status: 'delivered',
        attempts: 2,
        nextAttemptAt: 16_000,
        lastStatus: 204,
        lastError: null,
      });
      expect(await store().leaseWebhook('msg_1', 16_000, 40_000)).toBe(false);
      expect((await store().jobWebhooks('job_1'))[0]).toMatchObject({
        status: 'delivered',
        attempts: 2,
        lastStatus: 204,
        lastError: null,
      });

      expect(await store().purgeJobs(19_999)).toBe(0);
      expect(await store().purgeJobs(20_000)).toBe(1);
      expect(await store().getJob('acct_a', 'job_1')).toBeUndefined();
      expect(await store().jobResults('job_1', -1, 10)).toEqual([]);
      expect(await store().listWebhooks('acct_a', { limit: 10 })).toEqual([]);
    });

    it("lists an account's webhooks newest first; an attempt's outcome holds only under its lease", async () => {
      const free = ITEMS.map((item) => ({ ...item, billable: false }));
      const finish = {
        status: 'completed',
        completedAt: 2000,
        failureReason: null,
        purgeAt: 99_000,
      } as const;
      const message = (id: string, accountId: string, createdAt: number): WebhookMessage => ({
        id,
        accountId,
        jobId: `job_${id}`,
        url: 'https://hooks.example.com/',
        payload: '{}',
        status: 'pending',
        attempts: 0,
        nextAttemptAt: createdAt,
        lastStatus: null,
        lastError: null,
        createdAt,
      });
      // Two at one time (ordered by id then), one of another account.
      for (const [id, accountId, at] of [
        ['msg_b', 'acct_a', 3000],
        ['msg_c', 'acct_a', 2000],
        ['msg_a', 'acct_a', 3000],
        ['msg_x', 'acct_b', 4000],
      ] as const) {
        const made = job(`job_${id}`, accountId, { reservation: null, holds: 0, billable: 0 });
        await store().createJob(made, free, { requests: [] }, 1000);
        const outcome = await store().finishJob(
          accountId,
          `job_${id}`,
          finish,
          message(id, accountId, at),
          at,
        );
        expect(outcome).toMatchObject({ ok: true });
      }
      const ids = async (query: Parameters<Store['listWebhooks']>[1], account = 'acct_a') =>
        (await store().listWebhooks(account, query)).map((m) => m.id);
      expect(await ids({ limit: 10 })).toEqual(['msg_b', 'msg_a', 'msg_c']);
      expect(await ids({ limit: 2 })).toEqual(['msg_b', 'msg_a']);
      expect(await ids({ limit: 10 }, 'acct_b')).toEqual(['msg_x']);
      expect(await ids({ limit: 10 }, 'acct_none')).toEqual([]);

      // An attempt leases msg_a; a redelivery moves it meanwhile: the attempt's outcome is
      // dropped, the redelivery stands.
      expect(await store().leaseWebhook('msg_a', 3000, 33_000)).toBe(true);
      const failed = {
        status: 'failed',
        attempts: 8,
        nextAttemptAt: 5000,
        lastStatus: null,
        lastError: 'connect: refused',
      } as const;
      const requeued = { ...failed, status: 'pending', attempts: 0, nextAttemptAt: 6000 } as const;
      expect(await store().updateWebhook('msg_a', requeued)).toBe(true);
      expect(await store().updateWebhook('msg_a', failed, 33_000)).toBe(false);
      expect((await store().jobWebhooks('job_msg_a'))[0]).toMatchObject(requeued);
      // Under its lease, the outcome is written.
      expect(await store().leaseWebhook('msg_c', 2000, 32_000)).toBe(true);
      expect(await store().updateWebhook('msg_c', failed, 32_000)).toBe(true);
      expect(await store().updateWebhook('msg_none', failed)).toBe(false);

      expect(await ids({ status: 'failed', limit: 10 })).toEqual(['msg_c']);
      expect(await ids({ status: 'pending', limit: 1 })).toEqual(['msg_b']);
      expect(await ids({ status: 'delivered', limit: 10 })).toEqual([]);
      expect(await store().listWebhooks('acct_a', { status: 'failed', limit: 10 })).toMatchObject([
        {
          id: 'msg_c',
          jobId: 'job_msg_c',
          attempts: 8,
          lastStatus: null,
          lastError: 'connect: refused',
        },
      ]);
      expect(await store().purgeJobs(99_000)).toBe(4);
      expect(await ids({ limit: 10 })).toEqual([]);
    });
  });
}
