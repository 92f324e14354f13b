import { describeType, parseAddress, type ParseAddressOptions } from '../address/parse.js';
import { createNodeDns, type NodeDnsOptions } from '../adapters/node-dns.js';
import type {
  AddressFacts,
  CheckResult,
  Checker,
  CheckPorts,
  Finding,
  RiskFactor,
} from '../checks/checker.js';
import { syntaxFinding } from '../checks/syntax.js';
import { createCachedDns } from '../dns/cached-dns.js';
import { offlineDns } from '../dns/offline-dns.js';
import { systemClock, type Clock } from '../ports/clock.js';
import type { Dns } from '../ports/dns.js';
import {
  buildMethods,
  defaultCheckers,
  METHOD_NAMES,
  type CheckerSet,
  type Method,
  type MethodName,
} from './methods.js';
import { providerOf } from './provider.js';
import { DELIVERABLE_CEILING, RISKY_BASE, score, type Evidence } from './score.js';
import { testAddressVerdict, type TestAddressVerdict } from './test-addresses.js';
import { decide, UNKNOWN_REASONS, type Verdict } from './verdict.js';

export interface EngineOptions {
  /**
   * The DNS port. Default: Node's resolver (see `dnsServers`) behind a cache. Pass
   * `offlineDns()` (or `offline: true`) for verdicts without any network.
   */
  readonly dns?: Dns;
  /** Shorthand for `dns: offlineDns()`. */
  readonly offline?: boolean;
  /** Options of the default Node resolver: servers, deadline, tries. */
  readonly dnsOptions?: NodeDnsOptions;
  readonly clock?: Clock;
  /** Syntax policy: profile and options of `parseAddress`. Default: the default profile. */
  readonly parse?: ParseAddressOptions;
  /** Replace individual checkers (their data, say) without reshaping the methods. */
  readonly checkers?: Partial<CheckerSet>;
}

export interface VerifyOptions {
  /** `quick`, `standard` (default) or `smtp`. */
  readonly method?: MethodName;
  /** Aborts the verification: the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

/** The verification engine: pure logic over the ports it was built with. */
export interface Engine {
  /** Verifies one address. Rejects only for a non-string, an unknown method or an abort. */
  verify(address: string, options?: VerifyOptions): Promise<Verdict>;
  /** Credits a method costs. */
  cost(method: MethodName): number;
  /** The method table, as data. */
  readonly methods: Readonly<Record<MethodName, Method>>;
}

/**
 * Builds an engine from its ports. Nothing touches the network until `verify` is called.
 *
 * @example
 * const engine = createEngine({ offline: true });
 * const verdict = await engine.verify('info@mailinator.com', { method: 'standard' });
 * verdict.state; // 'risky' (disposable)
 */
export function createEngine(options: EngineOptions = {}): Engine {
  const clock = options.clock ?? systemClock;
  const dns =
    options.dns ??
    (options.offline === true
      ? offlineDns()
      : createCachedDns(createNodeDns(options.dnsOptions), { clock }));
  const ports: CheckPorts = { dns };
  const methods = buildMethods({ ...defaultCheckers(), ...options.checkers });
  const parseOptions = options.parse;

  function methodOf(name: MethodName | undefined): Method {
    const method = name === undefined ? methods.standard : methods[name];
    if (method === undefined || !Object.hasOwn(methods, name ?? 'standard')) {
      throw new TypeError(
        `Unknown method ${JSON.stringify(name)}: expected one of ${METHOD_NAMES.join(', ')}`,
      );
    }
    return method;
  }

  return {
    methods,
    cost: (name) => methodOf(name).cost,
    verify(address, verifyOptions = {}) {
      try {
        if (typeof address !== 'string') {
          throw new TypeError(
            `verify expects the address as a string, got ${describeType(address)}`,
          );
        }
        const method = methodOf(verifyOptions.method);
        const { signal } = verifyOptions;
        if (signal?.aborted) return Promise.reject(signal.reason as Error);
        const verdict = run(address, method, ports, clock, parseOptions, signal);
        return verdict instanceof Promise ? verdict : Promise.resolve(verdict);
      } catch (error) {
        return Promise.reject(error as Error);
      }
    },
  };
}

/** One verification: parse once, then the method's checkers in order until one fails. */
function run(
  input: string,
  method: Method,
  ports: CheckPorts,
  clock: Clock,
  parseOptions: ParseAddressOptions | undefined,
  signal: AbortSignal | undefined,
): Verdict | Promise<Verdict> {
  const started = clock.now();
  const parsed = parseAddress(input, parseOptions);
  const syntax = syntaxFinding(parsed);
  if (!parsed.ok) return buildVerdict({ input, parsed }, method, [syntax], started, clock);
  const fixed = testAddressVerdict(parsed);
  if (fixed !== undefined) return testVerdict({ input, parsed }, method, fixed, started, clock);
  const facts: AddressFacts = { input, parsed };
  const findings: Finding[] = [syntax];
  return runFrom(0);

  // Synchronous until a checker returns a promise: offline verification never awaits.
  function runFrom(index: number): Verdict | Promise<Verdict> {
    for (let i = index; i < method.checkers.length; i++) {
      const checker = method.checkers[i] as Checker;
      const result: CheckResult = checker.run(facts, ports, signal);
      if (result instanceof Promise) {
        return result.then((finding) => {
          findings.push(finding);
          return finding.status === 'fail' ? finish() : runFrom(i + 1);
        });
      }
      findings.push(result);
      if (result.status === 'fail') break;
    }
    return finish();
  }

  function finish(): Verdict {
    return buildVerdict(facts, method, findings, started, clock);
  }
}

function factorsOf(findings: readonly Finding[]): RiskFactor[] {
  const factors: RiskFactor[] = [];
  for (const finding of findings) {
    if (finding.factor !== undefined && !factors.includes(finding.factor))
      factors.push(finding.factor);
  }
  return factors;
}

function flag(
  findings: readonly Finding[],
  check: Finding['check'],
  factor: RiskFactor,
): boolean | null {
  const finding = findings.find((f) => f.check === check);
  if (finding === undefined || finding.status === 'skipped') return null;
  return finding.factor === factor;
}

function evidenceOf(findings: readonly Finding[]): Evidence {
  if (findings.some((f) => f.check === 'smtp' && f.status === 'pass')) return 'smtp';
  return findings.some((f) => f.check === 'mx' && f.status === 'pass') ? 'dns' : 'offline';
}

function buildVerdict(
  facts: {
    input: string;
    parsed: AddressFacts['parsed'] | import('../address/errors.js').ParseFailure;
    mx?: AddressFacts['mx'];
  },
  method: Method,
  findings: readonly Finding[],
  started: number,
  clock: Clock,
): Verdict {
  const { state, reason } = decide(findings);
  const riskFactors = factorsOf(findings);
  const start =
    state === 'deliverable'
      ? DELIVERABLE_CEILING[evidenceOf(findings)]
      : state === 'risky'
        ? UNKNOWN_REASONS.has(reason)
          ? RISKY_BASE.unknown
          : reason === 'low_deliverability'
            ? RISKY_BASE.low_deliverability
            : RISKY_BASE.low_quality
        : 0;
  const { parsed } = facts;
  const hosts = facts.mx?.hosts.map((h) => h.exchange) ?? [];
  const mxRecord = hosts[0] ?? null;
  return {
    email: parsed.ok ? parsed.address : facts.input,
    input: facts.input,
    state,
    reason,
    score: score(state, start, riskFactors),
    riskFactors,
    method: method.name,
    user: parsed.ok ? parsed.local : null,
    domain: parsed.ok ? parsed.domain : null,
    asciiDomain: parsed.ok ? parsed.asciiDomain : null,
    mxRecord,
    mxRecords: hosts,
    smtpProvider: providerOf(mxRecord),
    disposable: flag(findings, 'disposable', 'disposable'),
    role: flag(findings, 'role', 'role'),
    free: flag(findings, 'free_provider', 'free'),
    noReply: flag(findings, 'no_reply', 'no_reply'),
    catchAll: flag(findings, 'catch_all', 'catch_all'),
    mailboxFull: flag(findings, 'smtp', 'mailbox_full'),
    smtpUtf8: parsed.ok ? parsed.smtpUtf8 : false,
    testAddress: false,
    error: parsed.ok ? null : { code: parsed.code, message: parsed.message },
    checks: findings,
    duration: (clock.now() - started) / 1000,
  };
}

function testVerdict(
  facts: AddressFacts,
  method: Method,
  fixed: TestAddressVerdict,
  started: number,
  clock: Clock,
): Verdict {
  const { parsed } = facts;
  return {
    email: parsed.address,
    input: facts.input,
    state: fixed.state,
    reason: fixed.reason,
    score: fixed.score,
    riskFactors: fixed.riskFactors,
    method: method.name,
    user: parsed.local,
    domain: parsed.domain,
    asciiDomain: parsed.asciiDomain,
    mxRecord: null,
    mxRecords: [],
    smtpProvider: null,
    disposable: false,
    role: false,
    free: false,
    noReply: false,
    catchAll: fixed.riskFactors.includes('catch_all'),
    mailboxFull: false,
    smtpUtf8: false,
    testAddress: true,
    error: null,
    checks: [],
    duration: (clock.now() - started) / 1000,
  };
}
