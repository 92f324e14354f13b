import type { ParsedAddress, ParseResult } from '../address/parse.js';
import type { FilterAction } from '../ports/store.js';
import type { MethodName } from './methods.js';
import { testAddressVerdict, type TestAddressVerdict } from './test-addresses.js';
import type { Reason, Verdict } from './verdict.js';

/** Verdicts of filters: decided by the account's own list, no check runs. */
const FILTER_VERDICTS: Readonly<Record<FilterAction, TestAddressVerdict>> = {
  block: { state: 'undeliverable', reason: 'blocked_by_filter', score: 0, riskFactors: [] },
  allow: { state: 'deliverable', reason: 'allowed_by_filter', score: 100, riskFactors: [] },
};

const FILTER_REASONS: ReadonlySet<Reason> = new Set(
  Object.values(FILTER_VERDICTS).map((verdict) => verdict.reason),
);

/**
 * The one rule for a verdict given without checks and without charge: a test address answers
 * first, then a match of the caller's filters, if `filterAction` names one. `filterAction` is
 * asked only about a valid address that is no test address; when it answers later (a store
 * read, a DNS lookup), so does this. Undefined when neither applies: the address is verified,
 * and charged.
 */
export function freeVerdict(
  input: string,
  parsed: ParseResult,
  method: MethodName,
  filterAction?: (parsed: ParsedAddress) => FilterAction | undefined,
): Verdict | undefined;
export function freeVerdict(
  input: string,
  parsed: ParseResult,
  method: MethodName,
  filterAction: (parsed: ParsedAddress) => Promise<FilterAction | undefined>,
): Verdict | undefined | Promise<Verdict | undefined>;
export function freeVerdict(
  input: string,
  parsed: ParseResult,
  method: MethodName,
  filterAction?: (
    parsed: ParsedAddress,
  ) => FilterAction | undefined | Promise<FilterAction | undefined>,
): Verdict | undefined | Promise<Verdict | undefined> {
  if (!parsed.ok) return undefined;
  const test = testAddressVerdict(parsed);
  if (test !== undefined) return fixedVerdict(input, parsed, method, test, 'test_address');
  // Without a filter, nothing more is allocated: the engine asks this of every address.
  if (filterAction === undefined) return undefined;
  const action = filterAction(parsed);
  return action instanceof Promise
    ? action.then((found) => filterVerdict(input, parsed, method, found))
    : filterVerdict(input, parsed, method, action);
}

function filterVerdict(
  input: string,
  parsed: ParsedAddress,
  method: MethodName,
  action: FilterAction | undefined,
): Verdict | undefined {
  if (action === undefined) return undefined;
  // An IpFilter is the caller's code: an answer that is no action is a bug to name, not a verdict.
  if (!Object.hasOwn(FILTER_VERDICTS, action)) {
    throw new TypeError(
      `A filter answered ${JSON.stringify(action)}: expected 'block', 'allow' or undefined`,
    );
  }
  return fixedVerdict(input, parsed, method, FILTER_VERDICTS[action], 'filter');
}

/** Whether `verdict` is one `freeVerdict` gives (a test address's or a filter's): it costs nothing. */
export function isFree(verdict: Verdict): boolean {
  return verdict.testAddress || FILTER_REASONS.has(verdict.reason);
}

/**
 * A verdict fixed in advance, for a test address or a filter match: no check ran, so the
 * flags a check would set are false for test addresses (their behaviour is documented) and
 * null for filter matches (nothing was looked at).
 */
function fixedVerdict(
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
