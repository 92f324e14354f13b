/**
 * The service core used as a library by hostile or careless hosts: what
 * it answers must be true, and nothing a caller does with what it was handed, or hands in,
 * may change what is stored. Every case runs on the memory store and on SQLite.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { ServiceError } from '../../src/service/service-error.js';
import { createService } from '../../src/compose/service.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { createManualClock } from '../../src/testing.js';
import { fixture as baseFixture, refusal, STORES } from '../helpers/service.js';

afterEach(() => {
  vi.useRealTimers();
});

/** Mutates `value` as a careless host might; strict-mode TypeErrors (frozen) are fine too. */
function scribble(mutate: () => void): void {
  try {
    mutate();
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
  }
}

describe.each(STORES)('answers handed to a host on the %s store', (_name, makeStore) => {
  const fixture = () => baseFixture({ store: makeStore() });

  it('are copies: changing a listed allow-list opens nothing', async () => {
    const { service, accountId } = await fixture();
    const created = await service.admin.createKey(accountId, { allowedIps: ['203.0.113.0/24'] });
    scribble(() => (created.key.allowedIps as string[]).push('0.0.0.0/0'));
    const [, listed] = await service.admin.listKeys(accountId);
    scribble(() => (listed!.allowedIps as string[]).push('0.0.0.0/0'));
    const updated = await service.admin.updateKey(accountId, created.key.id, { name: 'ci' });
    scribble(() => (updated.allowedIps as string[]).push('0.0.0.0/0'));

    const refused = await refusal(
      service.authenticate({
        authorization: `Bearer ${created.secret}`,
        clientIp: '198.51.100.7',
        endpoint: 'verify',
      }),
    );
    expect(refused.code).toBe('forbidden');
    const [, again] = await service.admin.listKeys(accountId);
    expect(again!.allowedIps).toEqual(['203.0.113.0/24']);
  });

  it("are copies: changing a caller's key or account changes no later request", async () => {
    const { service, accountId } = await fixture();
    const created = await service.admin.createKey(accountId, { allowedIps: ['203.0.113.0/24'] });
    const request = {
      authorization: `Bearer ${created.secret}`,
      clientIp: '203.0.113.9',
      endpoint: 'verify' as const,
    };
    const caller = await service.authenticate(request);
    scribble(() => (caller.key.allowedIps as string[]).push('0.0.0.0/0'));
    scribble(() => {
      (caller.account as { plan: string }).plan = 'free';
    });
    // Within the key cache's second: the next request sees what is stored, not the scribbles.
    const next = await service.authenticate(request);
    expect(next.plan.name).toBe('enterprise');
    expect(next.key.allowedIps).toEqual(['203.0.113.0/24']);
    const refused = await refusal(service.authenticate({ ...request, clientIp: '198.51.100.7' }));
    expect(refused.code).toBe('forbidden');
    expect((await service.admin.getAccount(accountId)).plan).toBe('enterprise');
  });

  it('are copies: changing a receipt or an account balance changes no credit', async () => {
    const { service, accountId } = await fixture();
    const receipt = await service.admin.grantCredits(accountId, 5, { ref: 'top-up-1' });
    scribble(() => {
      (receipt.balance as { available: number }).available = 1e9;
    });
    const replay = await service.admin.grantCredits(accountId, 5, { ref: 'top-up-1' });
    scribble(() => {
      (replay.balance as { total: number }).total = 0;
    });
    const info = await service.admin.getAccount(accountId);
    scribble(() => {
      (info.credits as { available: number }).available = 7;
    });
    const [listed] = await service.admin.listAccounts();
    scribble(() => {
      (listed!.credits as { used: number }).used = 3;
      (listed as { plan: string }).plan = 'free';
    });
    const filter = await service.createFilter(
      { accountId },
      {
        type: 'domain',
        value: 'blocked.example',
        action: 'block',
      },
    );
    scribble(() => {
      (filter as { action: string }).action = 'allow';
    });
    const page = await service.listFilters({ accountId });
    scribble(() => {
      (page.filters[0] as { value: string }).value = 'other.example';
    });

    expect((await service.admin.getAccount(accountId)).credits).toEqual({
      available: 105,
      reserved: 0,
      used: 0,
      total: 105,
    });
    expect((await service.admin.getAccount(accountId)).plan).toBe('enterprise');
    const verdict = await service.verify({ accountId }, 'a@blocked.example', { method: 'quick' });
    expect(verdict.verdict.reason).toBe('blocked_by_filter');
  });
});

describe.each(STORES)('verify for an account that does not exist, on the %s store', (_n, make) => {
  it('is 404 for test addresses and filter matches too, as for any other address', async () => {
    const { service } = await baseFixture({ store: make() });
    const nobody = { accountId: 'acct_doesnotexist' };
    for (const email of ['deliverable@example.com', 'a@example.org']) {
      const refused = await refusal(service.verify(nobody, email, { method: 'quick' }));
      expect(refused.code).toBe('not_found');
    }
  });
});

describe.each(STORES)('hostile objects on the %s store', (_name, makeStore) => {
  it('are refused as invalid_request naming the parameter, never a raw TypeError', async () => {
    const { service, accountId, secret } = await baseFixture({ store: makeStore() });
    const revoked = () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy as never;
    };
    const throwing = () =>
      new Proxy(
        {},
        {
          get() {
            throw new Error('trap');
          },
          ownKeys() {
            throw new Error('trap');
          },
        },
      ) as never;
    const before = await service.admin.getAccount(accountId);
    const cases: [string, () => Promise<unknown>, string][] = [
      ['createAccount', () => service.admin.createAccount(revoked()), 'account'],
      ['createAccount', () => service.admin.createAccount(throwing()), 'account'],
      ['verify caller', () => service.verify(revoked(), 'a@example.org'), 'caller'],
      [
        'verify options',
        () => service.verify({ accountId }, 'a@example.org', throwing()),
        'options',
      ],
      ['grantCredits', () => service.admin.grantCredits(accountId, 1, revoked()), 'options'],
      ['applyLedger', () => service.admin.applyLedger(accountId, throwing()), 'request'],
      ['authenticate', () => service.authenticate(revoked()), 'request'],
      [
        'createKey',
        () => service.admin.createKey(accountId, { allowedIps: revoked() }),
        'allowed_ips',
      ],
      [
        'createKey',
        () =>
          service.admin.createKey(accountId, {
            allowedIps: new Proxy(['203.0.113.1'], {
              get(target, key) {
                if (key === 'length') return 1;
                throw new Error('trap');
              },
            }),
          }),
        'allowed_ips',
      ],
      ['createFilter', () => service.createFilter({ accountId }, throwing()), 'filter'],
      ['listFilters', () => service.listFilters({ accountId }, revoked()), 'query'],
      [
        'rotateKey',
        async () => {
          const [key] = await service.admin.listKeys(accountId);
          return service.admin.rotateKey(accountId, key!.id, throwing());
        },
        'options',
      ],
      [
        'verify signal',
        () => service.verify({ accountId }, 'a@example.org', { signal: revoked() }),
        'signal',
      ],
    ];
    for (const [label, call, field] of cases) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, label).toBeInstanceOf(ServiceError);
      expect((error as ServiceError).code, label).toBe('invalid_request');
      expect((error as ServiceError).context.field, label).toBe(field);
    }
    const after = await service.admin.getAccount(accountId);
    expect(after.credits).toEqual(before.credits);
    expect(await service.admin.listKeys(accountId)).toHaveLength(1);
    expect((await service.listFilters({ accountId })).total).toBe(0);
    const caller = await service.authenticate({
      authorization: `Bearer ${secret}`,
      endpoint: 'account',
    });
    expect((await service.account(caller)).credits.available).toBe(100);
  });
});

describe.each(STORES)('amounts at Number.MAX_SAFE_INTEGER on the %s store', (_name, makeStore) => {
  it('takes any amount the bound allows, refusing only what would pass it', async () => {
    const { service, accountId } = await baseFixture({
      store: makeStore(),
      account: { credits: 0 },
    });
    const top = Number.MAX_SAFE_INTEGER;
    // Amounts and balances up to the bound (MAX_LEDGER_AMOUNT); only what would pass it is refused.
    const granted = await service.admin.grantCredits(accountId, top, { ref: 'all-of-it' });
    expect(granted.balance).toEqual({ available: top, reserved: 0, used: 0, total: top });
    const over = await refusal(service.admin.grantCredits(accountId, 1));
    expect([over.code, over.context.field]).toEqual(['invalid_request', 'amount']);
    const held = await service.admin.applyLedger(accountId, {
      kind: 'reserve',
      ref: 'hold-all',
      amount: top,
    });
    expect(held.balance).toEqual({ available: 0, reserved: top, used: 0, total: top });
    await service.admin.applyLedger(accountId, {
      kind: 'settle',
      ref: 'settle-all',
      reservation: 'hold-all',
      amount: top,
    });
    const back = await service.admin.refund(accountId, { reservation: 'hold-all', ref: 'r' });
    expect(back.entry.amount).toBe(top);
    expect(back.balance).toEqual({ available: top, reserved: 0, used: 0, total: top });
    // A replay of the first grant changes nothing; one more credit is still refused.
    expect((await service.admin.grantCredits(accountId, top, { ref: 'all-of-it' })).replayed).toBe(
      true,
    );
    for (const amount of [top + 1, 2 ** 53 + 2, 1e21, Number.MAX_VALUE]) {
      const refused = await refusal(service.admin.grantCredits(accountId, amount));
      expect([refused.code, refused.context.field]).toEqual(['invalid_request', 'amount']);
    }
    expect((await service.admin.getAccount(accountId)).credits.total).toBe(top);

    const rich = await service.admin.createAccount({ email: 'rich@example.org', credits: top });
    expect(rich.credits.total).toBe(top);
  });
});

describe('createService with wrong options', () => {
  it('throws invalid_request naming the option, never a TypeError or a silent unlimited', () => {
    const engine = createEngine({ offline: true });
    const store = createMemoryStore();
    const cases: [unknown, string][] = [
      [undefined, 'options'],
      [null, 'options'],
      [{ store }, 'engine'],
      [{ engine }, 'store'],
      [{ engine, store: {} }, 'store'],
      [{ engine, store, clock: {} }, 'clock'],
      [{ engine, store, random: 5 }, 'random'],
      [{ engine, store, observer: 'x' }, 'observer'],
      ...[Number.NaN, -1, 0, 1.5, '5', Infinity, 10n].map((limit): [unknown, string] => [
        { engine, store, publicKeyDailyLimit: limit },
        'public_key_daily_limit',
      ]),
    ];
    for (const [options, field] of cases) {
      let error: unknown;
      try {
        createService(options as never);
      } catch (e) {
        error = e;
      }
      expect(error, field).toBeInstanceOf(ServiceError);
      expect((error as ServiceError).code, field).toBe('invalid_request');
      expect((error as ServiceError).context.field, field).toBe(field);
    }
    expect(() => createService({ engine, store, publicKeyDailyLimit: 3 })).not.toThrow();
  });
});

describe.each(STORES)('concurrent key administration on the %s store', (_name, makeStore) => {
  const at = Date.UTC(2026, 0, 1);
  const make = async () => {
    const service = createService({
      engine: createEngine({ offline: true }),
      store: makeStore(),
      clock: createManualClock(at),
    });
    const account = await service.admin.createAccount({ email: 'ops@example.org' });
    const created = await service.admin.createKey(account.id);
    const get = async () =>
      (await service.admin.listKeys(account.id)).find((key) => key.id === created.key.id)!;
    return { service, accountId: account.id, keyId: created.key.id, get };
  };

  it('never extends a grace period, even by two rotations at once', async () => {
    const { service, accountId, keyId, get } = await make();
    await Promise.all([
      service.admin.rotateKey(accountId, keyId, { graceSeconds: 60 }),
      service.admin.rotateKey(accountId, keyId, { graceSeconds: 86_400 }),
    ]);
    expect((await get()).expiresAt).toBe(at + 60_000);
  });

  it('loses no change when two updates of one key run at once', async () => {
    const { service, accountId, keyId, get } = await make();
    await Promise.all([
      service.admin.updateKey(accountId, keyId, { name: 'deploy' }),
      service.admin.updateKey(accountId, keyId, { allowedIps: ['203.0.113.0/24'] }),
    ]);
    expect(await get()).toMatchObject({ name: 'deploy', allowedIps: ['203.0.113.0/24'] });
  });
});

describe.each(STORES)('the plan a Caller carries, on the %s store', (_name, makeStore) => {
  it('cannot be changed by a host to lift the limits of every key on the plan', async () => {
    const { service, accountId } = await baseFixture({
      store: makeStore(),
      account: { plan: 'free' },
    });
    const { secret } = await service.admin.createKey(accountId);
    const request = { authorization: `Bearer ${secret}`, endpoint: 'verify' as const };
    const caller = await service.authenticate(request);
    scribble(() => {
      (caller.plan as { perMinute: number }).perMinute = 1_000_000;
      (caller.plan as { perDay: number }).perDay = 1_000_000;
    });
    let admitted = 1;
    for (let i = 0; i < 20; i++) {
      if (
        await service.authenticate(request).then(
          () => true,
          () => false,
        )
      )
        admitted++;
    }
    expect(admitted).toBe(10);
  });
});

describe.each(STORES)('verdicts handed to a host, on the %s store', (_name, makeStore) => {
  it("are its own: changing one's risk factors changes no later verdict", async () => {
    const { service, accountId } = await baseFixture({ store: makeStore() });
    await service.createFilter(
      { accountId },
      {
        type: 'domain',
        value: 'blocked.example',
        action: 'block',
      },
    );
    for (const email of ['risky@example.com', 'a@blocked.example']) {
      const first = await service.verify({ accountId }, email, { method: 'quick' });
      const expected = [...first.verdict.riskFactors];
      scribble(() => (first.verdict.riskFactors as string[]).push('scribbled'));
      const again = await service.verify({ accountId }, email, { method: 'quick' });
      expect(again.verdict.riskFactors, email).toEqual(expected);
    }
  });
});
