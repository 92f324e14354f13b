import type { ParsedAddress } from '../address/parse.js';
import type { RiskFactor } from '../checks/checker.js';
import type { Reason } from './verdict.js';
import type { State } from './score.js';

export interface TestAddressVerdict {
  readonly state: State;
  readonly reason: Reason;
  readonly score: number;
  readonly riskFactors: readonly RiskFactor[];
}

/**
 * Three addresses with fixed verdicts for every method, so integrations can be
 * tested end to end without network and without credits.
 */
export const TEST_ADDRESSES: Readonly<Record<string, TestAddressVerdict>> = {
  deliverable: { state: 'deliverable', reason: 'accepted_email', score: 100, riskFactors: [] },
  undeliverable: {
    state: 'undeliverable',
    reason: 'rejected_email',
    score: 0,
    riskFactors: ['smtp_rejected'],
  },
  risky: { state: 'risky', reason: 'low_deliverability', score: 60, riskFactors: ['catch_all'] },
};

/** The fixed verdict when `parsed` is a test address (case-insensitive), else undefined. */
export function testAddressVerdict(parsed: ParsedAddress): TestAddressVerdict | undefined {
  if (parsed.asciiDomain !== 'example.com') return undefined;
  const local = parsed.local.toLowerCase();
  return Object.hasOwn(TEST_ADDRESSES, local) ? TEST_ADDRESSES[local] : undefined;
}
