import type { ParsedAddress } from '../address/parse.js';
import type { MethodName } from './methods.js';
import type { TestAddressVerdict } from './test-addresses.js';
import type { Verdict } from './verdict.js';

/** Verdicts of filters (DESIGN 5.4): decided by the account's own list, no check runs. */
export const FILTER_VERDICTS: Readonly<Record<'block' | 'allow', TestAddressVerdict>> = {
  block: { state: 'undeliverable', reason: 'blocked_by_filter', score: 0, riskFactors: [] },
  allow: { state: 'deliverable', reason: 'allowed_by_filter', score: 100, riskFactors: [] },
};

/**
 * A verdict fixed in advance, for a test address or a filter match: no check ran, so the
 * flags a check would set are false for test addresses (their behaviour is documented) and
 * null for filter matches (nothing was looked at).
 */
export function fixedVerdict(
  input: string,
  parsed: ParsedAddress,
  method: MethodName,
  fixed: TestAddressVerdict,
  source: 'test_address' | 'filter',
): Verdict {
  const flag = source === 'test_address' ? false : null;
  return {
    email: parsed.address,
    input,
    state: fixed.state,
    reason: fixed.reason,
    score: fixed.score,
    // The caller's own list: the table's, shared, would let one answer change every later one.
    riskFactors: [...fixed.riskFactors],
    method,
    user: parsed.local,
    domain: parsed.domain,
    asciiDomain: parsed.asciiDomain,
    mxRecord: null,
    mxRecords: [],
    smtpProvider: null,
    disposable: flag,
    role: flag,
    free: flag,
    noReply: flag,
    catchAll: source === 'test_address' ? fixed.riskFactors.includes('catch_all') : null,
    mailboxFull: flag,
    didYouMean: null,
    smtpUtf8: parsed.smtpUtf8,
    testAddress: source === 'test_address',
    error: null,
    checks: [],
    duration: 0,
  };
}
