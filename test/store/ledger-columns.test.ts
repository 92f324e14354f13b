import { describe, expect, it } from 'vitest';
import { LedgerColumns } from '../../src/store/ledger-columns.js';

describe('LedgerColumns', () => {
  it('finds every entry by reference across many growths of its index, and no other', () => {
    const ledger = new LedgerColumns('acct_a');
    const refs: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      // References that share long prefixes, as the service's own do.
      const ref = i % 3 === 0 ? `mv:verify:AbCdEfGh.${i.toString(36)}` : `caller-${i}`;
      refs.push(ref);
      ledger.append(
        {
          accountId: 'acct_a',
          ref,
          kind: 'grant',
          amount: 1,
          delta: 1,
          reservation: null,
          note: null,
          createdAt: i,
        },
        i + 1,
      );
    }
    refs.forEach((ref, i) => expect(ledger.entry(ref)?.seq).toBe(i + 1));
    for (const missing of ['mv:verify:AbCdEfGh.zzzzzz', 'caller-20000', '', 'caller-1 ']) {
      expect(ledger.entry(missing)).toBeUndefined();
    }
  });
});
