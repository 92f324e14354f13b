import { afterEach, describe, expect, it, vi } from 'vitest';
import { fixture, STORES } from '../helpers/service.js';

afterEach(() => {
  vi.useRealTimers();
});

describe.each(STORES)('the account object on %s', (_name, makeStore) => {
  it('gives the billing period as YYYY-MM-DD (UTC), the end its last day, inclusive', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const cases: [number, number, { start: string; end: string }][] = [
      // Anchored on the 15th, on the 21st of November: Nov 15 to Dec 14.
      [15, Date.UTC(2026, 10, 21, 23, 59), { start: '2026-11-15', end: '2026-12-14' }],
      // The last moment of a period is still in it.
      [15, Date.UTC(2026, 10, 15) - 1, { start: '2026-10-15', end: '2026-11-14' }],
      // Anchored on the 1st: a calendar month.
      [1, Date.UTC(2026, 11, 31, 12), { start: '2026-12-01', end: '2026-12-31' }],
      // Anchored on the 31st in a leap February: Jan 31 to Feb 28, then Feb 29 onwards.
      [31, Date.UTC(2028, 1, 28, 12), { start: '2028-01-31', end: '2028-02-28' }],
      [31, Date.UTC(2028, 1, 29, 12), { start: '2028-02-29', end: '2028-03-30' }],
    ];
    for (const [billingAnchorDay, now, period] of cases) {
      vi.setSystemTime(now);
      const { service, secret } = await fixture({
        store: makeStore(),
        account: { billingAnchorDay },
      });
      const caller = await service.authenticate({ apiKey: secret, endpoint: 'account' });
      expect((await service.account(caller)).billing_period).toEqual(period);
      await service.store.close();
    }
  });
});
