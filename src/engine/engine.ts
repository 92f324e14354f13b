import {
  describeType,
  parseAddress,
  type ParseAddressOptions,
  type ParseResult,
} from '../address/parse.js';
import { resolveParseOptions } from '../address/options.js';
import type { AddressFacts, CheckPorts, CheckResult, Checker } from '../checks/checker.js';
import { syntaxFinding } from '../checks/syntax.js';
import type { Clock } from '../ports/clock.js';
import type { Dns, DnsHealth } from '../ports/dns.js';
import type { IpFilter } from '../ports/ip-filter.js';
import type { Observer } from '../ports/observer.js';
import type { SmtpProber } from '../ports/smtp.js';
import { optional } from '../optional.js';
import { batchProbes } from './probe-batcher.js';
import {
  verifyEach,
  type VerifyManyIterator,
  type DomainIo,
  type VerifyManyOptions,
} from './verify-many.js';
import {
  buildMethods,
  defaultCheckers,
  METHOD_NAMES,
  type CheckerSet,
  type Method,
  type MethodName,
} from './methods.js';
import { providerOf } from './provider.js';
import { FindingPath, type Outcome } from './outcome.js';
import { freeVerdict } from './free-verdict.js';
import {
  ipFilterAction,
  ipFilterActionOnce,
  prefetchHostAddresses,
  type DomainAnswers,
} from './ip-filter-stage.js';
import type { Verdict } from './verdict.js';

/**
 * What an engine is built from: its ports, resolved (the package's createEngine resolves the
 * Node defaults), and its settings.
 */
export interface EngineParts {
  readonly dns: Dns;
  /** The SMTP port for the smtp method; none for an engine that never probes. */
  readonly smtp: SmtpProber | undefined;
  readonly clock: Clock;
  /** How long a domain's catch-all answer is reused. Default 1 hour. */
  readonly catchAllTtlMs?: number;
  /** Wait before asking a greylisting server again (`retryGreylisted`). Default 6 minutes. */
  readonly greylistRetryMs?: number;
  /** Syntax policy: profile and options of `parseAddress`. Default: the default profile. */
  readonly parse?: ParseAddressOptions;
  /** Replace individual checkers (their data, say) without reshaping the methods. */
  readonly checkers?: Partial<CheckerSet>;
  /**
   * Domains that are never disposable whatever the maintained lists say (your own false
   * positives), with their subdomains; the default list is kept. Ignored when `checkers`
   * replaces the disposable checker (then pass `disposable({ allow })` there).
   */
  readonly disposableAllow?: Iterable<string>;
  /**
   * Told of every verdict and of SMTP probes (metrics: adapters/prometheus/metrics.ts).
   * Default none, at no cost.
   */
  readonly observer?: Observer;
}

export interface VerifyOptions {
  /** `quick`, `standard` (default) or `smtp`. */
  readonly method?: MethodName;
  /** Aborts the verification: the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * When an SMTP server greylists, wait `greylistRetryMs` and ask once more, instead of
   * answering `unavailable_smtp` at once. Default false: a signup form cannot wait minutes.
   */
  readonly retryGreylisted?: boolean;
  /**
   * The caller's IP filters (a service account's): asked once the mx check knows the mail
   * hosts, about a domain literal's address or the addresses of the first three MX hosts; a
   * match answers `blocked_by_filter` or `allowed_by_filter` without the remaining checks.
   */
  readonly ipFilter?: IpFilter;
}

/** The verification engine: pure logic over the ports it was built with. */
export interface Engine {
  /** Verifies one address. Rejects only for a non-string, an unknown method or an abort. */
  verify(address: string, options?: VerifyOptions): Promise<Verdict>;
  /**
   * Verifies one address synchronously, for offline engines only (`offline: true`): a form
   * validator's hot path without a promise. Throws a TypeError on an engine that does I/O.
   */
  verifySync(address: string, options?: Omit<VerifyOptions, 'signal' | 'ipFilter'>): Verdict;
  /**
   * Verifies many addresses, grouped by domain so that one MX lookup and one SMTP session
   * serve each group. Yields `{ index, verdict }` as each completes (not in input order).
   */
  verifyMany(
    addresses: Iterable<string> | AsyncIterable<string>,
    options?: VerifyManyOptions,
  ): VerifyManyIterator;
  /** Credits a method costs. */
  cost(method: MethodName): number;
  /** The method table, as data. */
  readonly methods: Readonly<Record<MethodName, Method>>;
  /** Parses an address with this engine's syntax policy (`parse` option). */
  parse(address: string): ParseResult;
  /** The Dns port verifications use (the service resolves IP filters through its cache). */
  readonly dns: Dns;
  /**
   * Whether this engine can answer the smtp method: false for an offline engine (`offline`,
   * an offline Dns or an offline SmtpProber), which refuses it with a TypeError.
   */
  readonly canProbe: boolean;
  /**
   * Whether the resolver tells the truth, by the default resolver's canary (dns/canary-dns.ts):
   * `lying` while NXDOMAIN and implicit-MX answers are not taken as evidence. `unchecked`
   * for an injected Dns without a canary, and until an answer needed checking.
   */
  dnsHealth(): DnsHealth;
  /** The observer the engine was built with: a service built over it reports to it too. */
  readonly observer?: Observer;
}

/**
 * Builds an engine from resolved ports: pure logic over them, nothing of Node's. Nothing
 * touches the network until `verify` is called. The package's `createEngine` is this with
 * the Node defaults composed in.
 */
export function buildEngine(options: EngineParts): Engine {
  const { clock, dns, observer } = options;
  const smtp = observedProber(options.smtp, observer);
  const ports: CheckPorts =
    smtp === undefined
      ? { dns }
      : {
          dns,
          smtp: batchProbes(smtp, { clock, ...optional('catchAllTtlMs', options.catchAllTtlMs) }),
        };
  const smtpChecks = optional('greylistRetryMs', options.greylistRetryMs);
  const methods = buildMethods({
    ...defaultCheckers(smtpChecks, options.disposableAllow),
    ...options.checkers,
  });
  const parseOptions = options.parse;
  // A mistyped profile is a mistake of the engine's making, said now rather than by every
  // verification it would have failed.
  resolveParseOptions(parseOptions);
  const context: EngineContext = { ports, clock, parseOptions, paths: FindingPath.root() };
  const onVerdict = observer?.onVerdict?.bind(observer);
  // Without an observer the verifications run as they are: not even a call is added.
  const verification: typeof run =
    onVerdict === undefined ? run : (...args) => reported(run(...args), onVerdict);

  function methodOf(name: MethodName = 'standard'): Method {
    // hasOwn, not `in`: 'toString' must be as unknown as 'deep'.
    if (!Object.hasOwn(methods, name)) {
      throw new TypeError(
        `Unknown method ${JSON.stringify(name)}: expected one of ${METHOD_NAMES.join(', ')}`,
      );
    }
    return methods[name];
  }

  const canProbe = smtp !== undefined && smtp.offline !== true && dns.offline !== true;

  /** The smtp method needs a prober that connects: an engine without one cannot answer it. */
  function probeable(method: Method): Method {
    if (method.name === 'smtp' && !canProbe) {
      throw new TypeError(
        'The smtp method needs an engine that can reach mail servers: this one is offline ' +
          '(offline: true, an offline Dns or an offline SmtpProber), so it cannot probe a mailbox',
      );
    }
    return method;
  }

  /**
   * Warms the DNS cache with an address's MX answer, and with its hosts' addresses when an IP
   * filter will ask about them; verifyMany calls it ahead of time.
   */
  function prefetch(address: string, ipFilter: IpFilter | undefined): Promise<unknown> {
    const parsed = parseAddress(address, parseOptions);
    if (!parsed.ok || parsed.domainLiteral) return Promise.resolve();
    const mx = dns.mx(parsed.asciiDomain);
    return ipFilter === undefined ? mx : mx.then((answer) => prefetchHostAddresses(answer, dns));
  }

  const engine: Engine = {
    ...optional('observer', observer),
    methods,
    dns,
    canProbe,
    dnsHealth: () => dns.health?.() ?? UNCHECKED,
    parse: (address) => parseAddress(address, parseOptions),
    cost: (name) => methodOf(name).cost,
    verifySync(address, verifyOptions = {}) {
      requireString(address, 'verifySync');
      requireOptions(verifyOptions, 'verifySync');
      const method = methodOf(verifyOptions.method);
      if (dns.offline !== true || method.name === 'smtp') {
        throw new TypeError(
          'verifySync needs an offline engine (offline: true) and a method without SMTP',
        );
      }
      const verdict = verification(address, method, context, SYNC_CALL);
      if (verdict instanceof Promise) throw new TypeError('a checker did I/O during verifySync');
      return verdict;
    },
    verify(address, verifyOptions = {}) {
      try {
        requireString(address, 'verify');
        requireOptions(verifyOptions, 'verify');
        const method = probeable(methodOf(verifyOptions.method));
        const { signal, ipFilter } = verifyOptions;
        if (ipFilter !== undefined) requireIpFilter(ipFilter, 'verify');
        if (signal?.aborted) return Promise.reject(signal.reason as Error);
        const verdict = verification(address, method, context, verifyOptions);
        return verdict instanceof Promise ? verdict : Promise.resolve(verdict);
      } catch (error) {
        return Promise.reject(error as Error);
      }
    },
    verifyMany(addresses, manyOptions = {}) {
      requireIterable(addresses);
      requireOptions(manyOptions, 'verifyMany');
      const method = probeable(methodOf(manyOptions.method));
      // One call's options for every address: the run's signal, retry and filter, whose
      // answers the run keeps by domain.
      const { ipFilter } = manyOptions;
      if (ipFilter !== undefined) requireIpFilter(ipFilter, 'verifyMany');
      const call: VerifyCall =
        ipFilter === undefined ? manyOptions : { ...manyOptions, ipAnswers: new Map() };
      // verifyEach checks each item is a string; an offline verdict comes back without a promise.
      return verifyEach(
        addresses,
        manyOptions,
        (address) => verification(address, method, context, call),
        dns.offline === true
          ? NO_IO
          : { groupByDomain: true, prefetch: (address) => prefetch(address, ipFilter) },
      );
    },
  };
  return engine;
}

const UNCHECKED: DnsHealth = Object.freeze({ status: 'unchecked' });
const NO_IO: DomainIo = Object.freeze({ groupByDomain: false });
const SYNC_CALL: VerifyCall = Object.freeze({});

/** Tells `report` of a verdict once it is reached. */
function reported(
  verdict: Verdict | Promise<Verdict>,
  report: (verdict: Verdict) => void,
): Verdict | Promise<Verdict> {
  if (!(verdict instanceof Promise)) {
    report(verdict);
    return verdict;
  }
  return verdict.then((reached) => {
    report(reached);
    return reached;
  });
}

/** The prober, telling the observer of each probe's first recipient's answer and its connections. */
function observedProber(
  prober: SmtpProber | undefined,
  observer: Observer | undefined,
): SmtpProber | undefined {
  const onSession = observer?.onSmtpSession?.bind(observer);
  if (prober === undefined || onSession === undefined || prober.offline === true) return prober;
  return {
    async probe(request, signal) {
      const report = await prober.probe(request, signal);
      const first = report.recipients[0] ?? report.catchAll ?? undefined;
      if (first !== undefined) onSession(first.class, report.connections);
      return report;
    },
  };
}

/** A string is iterable too, but verifying each of its characters is never what was meant. */
function requireIterable(addresses: unknown): void {
  if (
    typeof addresses === 'string' ||
    typeof addresses !== 'object' ||
    addresses === null ||
    (typeof (addresses as Partial<Iterable<unknown>>)[Symbol.iterator] !== 'function' &&
      typeof (addresses as Partial<AsyncIterable<unknown>>)[Symbol.asyncIterator] !== 'function')
  ) {
    throw new TypeError(
      `verifyMany expects an iterable of address strings (an array, say), got ${describeType(addresses)}`,
    );
  }
}

/** An ipFilter that is not one would fail only once a domain's hosts are known: say so now. */
function requireIpFilter(filter: unknown, caller: string): void {
  if (typeof (filter as Partial<IpFilter> | null)?.match !== 'function') {
    throw new TypeError(
      `${caller}'s ipFilter must be an object with a match(ips, signal) method, got ${describeType(filter)}`,
    );
  }
}

/**
 * Options that are no object (null, a method name alone) would fail as a null dereference, or
 * be ignored: say which call was given what.
 */
function requireOptions(options: unknown, caller: string): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(
      `${caller} expects its options as an object ({ method: 'quick' }, say), got ${describeType(options)}`,
    );
  }
}

function requireString(address: unknown, caller: string): asserts address is string {
  if (typeof address !== 'string') {
    throw new TypeError(`${caller} expects the address as a string, got ${describeType(address)}`);
  }
}

/** What every verification of one engine shares. */
interface EngineContext {
  readonly ports: CheckPorts;
  readonly clock: Clock;
  readonly parseOptions: ParseAddressOptions | undefined;
  /** The start of the engine's trie of findings (outcome.ts). */
  readonly paths: FindingPath;
}

/** What one call of verify or verifyMany asks of each of its verifications. */
interface VerifyCall extends Pick<VerifyOptions, 'signal' | 'retryGreylisted' | 'ipFilter'> {
  /** verifyMany's: the IP filter's answers by domain, asked once per domain of the run. */
  readonly ipAnswers?: DomainAnswers;
}

/** One verification: parse once, then the method's checkers in order until one fails. */
function run(
  input: string,
  method: Method,
  context: EngineContext,
  call: VerifyCall,
): Verdict | Promise<Verdict> {
  const parsed = parseAddress(input, context.parseOptions);
  const syntax = context.paths.followedBy(syntaxFinding(parsed));
  if (!parsed.ok) {
    return buildVerdict(input, parsed, undefined, method, syntax.outcome, SYNCHRONOUS, context);
  }
  const free = freeVerdict(input, parsed, method.name);
  if (free !== undefined) return free;
  const facts: AddressFacts =
    call.retryGreylisted === true ? { input, parsed, retryGreylisted: true } : { input, parsed };
  return runFrom(0, syntax, facts, method, context, call, SYNCHRONOUS);
}

/**
 * The start time of a verification that never waited. The clock is read only once a checker
 * does I/O: a synchronous verification takes about a microsecond, reading the clock twice
 * cost a tenth of that (bench/), and its duration rounds to 0.000 s on the wire anyway.
 */
const SYNCHRONOUS = -1;

/**
 * Runs checkers from `index` on, synchronously until one returns a promise. Once the mx check
 * has passed (the mail hosts are known), the caller's IP filter has its say before the rest.
 */
function runFrom(
  index: number,
  path: FindingPath,
  facts: AddressFacts,
  method: Method,
  context: EngineContext,
  call: VerifyCall,
  started: number,
): Verdict | Promise<Verdict> {
  const { checkers } = method;
  const { signal } = call;
  const filtering = call.ipFilter !== undefined;
  for (let i = index; i < checkers.length; i++) {
    const checker = checkers[i] as Checker;
    const result: CheckResult = checker.run(facts, context.ports, signal);
    const filterNext = filtering && checker.name === 'mx';
    if (result instanceof Promise) {
      const startedAt = started === SYNCHRONOUS ? context.clock.now() : started;
      return result.then((finding) => {
        const next = path.followedBy(finding);
        if (finding.status === 'fail') return verdictOf(facts, method, next, startedAt, context);
        if (!filterNext) return runFrom(i + 1, next, facts, method, context, call, startedAt);
        const rest = (at: number) => runFrom(i + 1, next, facts, method, context, call, at);
        return afterIpFilter(facts, method, context, call, startedAt, rest);
      });
    }
    path = path.followedBy(result);
    if (result.status === 'fail') break;
    if (filterNext) {
      const checked = path;
      const rest = (at: number) => runFrom(i + 1, checked, facts, method, context, call, at);
      return afterIpFilter(facts, method, context, call, started, rest);
    }
  }
  return verdictOf(facts, method, path, started, context);
}

/**
 * The caller's IP filter over the mail hosts the mx check found: a match is the verdict (a
 * free one: no check after it runs); otherwise `rest`, the checks after mx, from `started`.
 */
function afterIpFilter(
  facts: AddressFacts,
  method: Method,
  context: EngineContext,
  call: VerifyCall,
  started: number,
  rest: (started: number) => Verdict | Promise<Verdict>,
): Verdict | Promise<Verdict> {
  const { parsed, input } = facts;
  const filter = call.ipFilter as IpFilter;
  const hosts = facts.mx?.hosts ?? [];
  const { dns } = context.ports;
  const action =
    call.ipAnswers === undefined
      ? ipFilterAction(parsed, hosts, dns, filter, call.signal)
      : ipFilterActionOnce(call.ipAnswers, parsed, hosts, dns, filter, call.signal);
  if (action === undefined) return rest(started);
  if (!(action instanceof Promise)) {
    return freeVerdict(input, parsed, method.name, () => action) ?? rest(started);
  }
  const startedAt = started === SYNCHRONOUS ? context.clock.now() : started;
  return action.then(
    (found) => freeVerdict(input, parsed, method.name, () => found) ?? rest(startedAt),
  );
}

function verdictOf(
  facts: AddressFacts,
  method: Method,
  path: FindingPath,
  started: number,
  context: EngineContext,
): Verdict {
  return buildVerdict(facts.input, facts.parsed, facts, method, path.outcome, started, context);
}

function buildVerdict(
  input: string,
  parsed: ParseResult,
  facts: Pick<AddressFacts, 'mx' | 'didYouMean'> | undefined,
  method: Method,
  outcome: Outcome,
  started: number,
  { clock }: EngineContext,
): Verdict {
  const mx = facts?.mx;
  const hosts = mx === undefined ? [] : mx.hosts.map((h) => h.exchange);
  const mxRecord = hosts[0] ?? null;
  return {
    email: parsed.ok ? parsed.address : input,
    input,
    state: outcome.state,
    reason: outcome.reason,
    score: outcome.score,
    riskFactors: outcome.riskFactors,
    method: method.name,
    user: parsed.ok ? parsed.local : null,
    domain: parsed.ok ? parsed.domain : null,
    asciiDomain: parsed.ok ? parsed.asciiDomain : null,
    mxRecord,
    mxRecords: hosts,
    smtpProvider: providerOf(mxRecord),
    disposable: outcome.disposable,
    role: outcome.role,
    free: outcome.free,
    noReply: outcome.noReply,
    catchAll: outcome.catchAll,
    mailboxFull: outcome.mailboxFull,
    didYouMean: facts?.didYouMean ?? null,
    smtpUtf8: parsed.ok ? parsed.smtpUtf8 : false,
    testAddress: false,
    error: parsed.ok ? null : { code: parsed.code, message: parsed.message },
    checks: outcome.checks,
    duration: started === SYNCHRONOUS ? 0 : (clock.now() - started) / 1000,
  };
}
