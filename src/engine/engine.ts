import {
  describeType,
  parseAddress,
  type ParseAddressOptions,
  type ParseResult,
} from '../address/parse.js';
import { createNodeDns, type NodeDnsOptions } from '../adapters/node/dns.js';
import type { NodeSmtpOptions } from '../adapters/node/smtp.js';
import type { AddressFacts, CheckPorts, CheckResult, Checker } from '../checks/checker.js';
import { syntaxFinding } from '../checks/syntax.js';
import { createCachedDns } from '../dns/cached-dns.js';
import { createCanaryDns, type DnsCanaryOptions } from '../dns/canary-dns.js';
import { offlineDns } from '../dns/offline-dns.js';
import { systemClock, type Clock } from '../ports/clock.js';
import type { Dns, DnsHealth } from '../ports/dns.js';
import type { Observer } from '../ports/observer.js';
import { assertSmtpIdentity } from '../smtp/commands.js';
import { parseProxyUrls } from '../smtp/proxy-url.js';
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
import { fixedVerdict } from './fixed-verdict.js';
import { testAddressVerdict } from './test-addresses.js';
import type { Verdict } from './verdict.js';

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
  /**
   * The default resolver checks itself before an NXDOMAIN or an implicit MX counts as
   * evidence (DESIGN 4; dns/canary-dns.ts): its names and timings, or `false` to trust the
   * resolver blindly. Ignored for an injected `dns`, which is the caller's to trust.
   */
  readonly dnsCanary?: DnsCanaryOptions | false;
  /**
   * Told, once per change, of conditions that affect every verdict (a lying resolver).
   * Default: a process warning (`MailverdictDns`).
   */
  readonly onWarning?: (message: string) => void;
  /**
   * The SMTP port for the smtp method. Default: our node:net prober (see `smtpOptions`),
   * created on first use; none when `offline` (the smtp check is then skipped).
   */
  readonly smtp?: SmtpProber;
  /** Options of the default prober: HELO name, MAIL FROM, port, timeouts, limits. */
  readonly smtpOptions?: NodeSmtpOptions;
  /** How long a domain's catch-all answer is reused. Default 1 hour. */
  readonly catchAllTtlMs?: number;
  /** Wait before asking a greylisting server again (`retryGreylisted`). Default 6 minutes. */
  readonly greylistRetryMs?: number;
  readonly clock?: Clock;
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
   * Told of every verdict, of the default DNS cache's queries and hits, and of SMTP probes
   * (metrics: adapters/prometheus/metrics.ts). Default none, at no cost.
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
}

/** The verification engine: pure logic over the ports it was built with. */
export interface Engine {
  /** Verifies one address. Rejects only for a non-string, an unknown method or an abort. */
  verify(address: string, options?: VerifyOptions): Promise<Verdict>;
  /**
   * Verifies one address synchronously, for offline engines only (`offline: true`): a form
   * validator's hot path without a promise. Throws a TypeError on an engine that does I/O.
   */
  verifySync(address: string, options?: Omit<VerifyOptions, 'signal'>): Verdict;
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
   * Whether the resolver tells the truth, by the default resolver's canary (DESIGN 4):
   * `lying` while NXDOMAIN and implicit-MX answers are not taken as evidence. `unchecked`
   * for an injected Dns without a canary, and until an answer needed checking.
   */
  dnsHealth(): DnsHealth;
  /** The observer the engine was built with: a service built over it reports to it too. */
  readonly observer?: Observer;
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
  // The prober is built on the first probe; a mistyped proxy, or a HELO name or sender that
  // would smuggle a second command, must not wait until then.
  const smtpOptions = options.smtpOptions;
  if (smtpOptions?.proxies !== undefined) parseProxyUrls(smtpOptions.proxies);
  if (smtpOptions?.heloName !== undefined) assertSmtpIdentity('heloName', smtpOptions.heloName);
  if (smtpOptions?.mailFrom !== undefined) assertSmtpIdentity('mailFrom', smtpOptions.mailFrom);
  const clock = options.clock ?? systemClock;
  const { observer } = options;
  const dns = options.dns ?? (options.offline === true ? offlineDns() : defaultDns(options, clock));
  const smtp = observedProber(
    options.smtp ?? (options.offline === true ? undefined : defaultProber(options, dns)),
    observer,
  );
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

  /** Warms the DNS cache with an address's MX answer; verifyMany calls it ahead of time. */
  function prefetch(address: string): Promise<unknown> {
    const parsed = parseAddress(address, parseOptions);
    if (!parsed.ok || parsed.domainLiteral) return Promise.resolve();
    return dns.mx(parsed.asciiDomain);
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
      const method = methodOf(verifyOptions.method);
      if (dns.offline !== true || method.name === 'smtp') {
        throw new TypeError(
          'verifySync needs an offline engine (offline: true) and a method without SMTP',
        );
      }
      const verdict = verification(address, method, context, undefined);
      if (verdict instanceof Promise) throw new TypeError('a checker did I/O during verifySync');
      return verdict;
    },
    verify(address, verifyOptions = {}) {
      try {
        requireString(address, 'verify');
        const method = probeable(methodOf(verifyOptions.method));
        const { signal } = verifyOptions;
        if (signal?.aborted) return Promise.reject(signal.reason as Error);
        const retry = verifyOptions.retryGreylisted === true;
        const verdict = verification(address, method, context, signal, retry);
        return verdict instanceof Promise ? verdict : Promise.resolve(verdict);
      } catch (error) {
        return Promise.reject(error as Error);
      }
    },
    verifyMany(addresses, manyOptions = {}) {
      requireIterable(addresses);
      const method = probeable(methodOf(manyOptions.method));
      const retry = manyOptions.retryGreylisted === true;
      // verifyEach checks each item is a string; an offline verdict comes back without a promise.
      return verifyEach(
        addresses,
        manyOptions,
        (address, { signal }) => verification(address, method, context, signal, retry),
        dns.offline === true ? NO_IO : { groupByDomain: true, prefetch },
      );
    },
  };
  return engine;
}

const UNCHECKED: DnsHealth = Object.freeze({ status: 'unchecked' });
const NO_IO: DomainIo = Object.freeze({ groupByDomain: false });

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

/** Node's resolver, checked by its canary unless told not to, behind a cache. */
function defaultDns(options: EngineOptions, clock: Clock): Dns {
  const warn =
    options.onWarning ?? ((message: string) => process.emitWarning(message, 'MailverdictDns'));
  const node = createNodeDns(options.dnsOptions);
  const canary = options.dnsCanary;
  const cache = { clock, ...optional('observer', options.observer) };
  if (canary === false) return createCachedDns(node, cache);
  const checked = createCanaryDns(node, {
    clock,
    ...canary,
    onChange(health) {
      warn(
        health.status === 'lying'
          ? health.message
          : 'The DNS resolver answers truthfully again: NXDOMAIN is evidence once more.',
      );
      canary?.onChange?.(health);
    },
  });
  return createCachedDns(checked, cache);
}

/** Our node:net prober, built on first use (its HELO warning is for smtp users only). */
function defaultProber(options: EngineOptions, dns: Dns): SmtpProber {
  let prober: Promise<SmtpProber> | undefined;
  return {
    probe(request, signal) {
      // Loaded on first use: engines that never probe never load the SMTP client (DESIGN 8).
      prober ??= import('../adapters/node/smtp.js').then(({ createNodeSmtp }) =>
        createNodeSmtp({
          resolveHost: (host, hostSignal) =>
            dns.addresses?.(host, hostSignal) ?? Promise.resolve([]),
          ...options.smtpOptions,
        }),
      );
      return prober.then((ready) => ready.probe(request, signal));
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

/** One verification: parse once, then the method's checkers in order until one fails. */
function run(
  input: string,
  method: Method,
  context: EngineContext,
  signal: AbortSignal | undefined,
  retryGreylisted = false,
): Verdict | Promise<Verdict> {
  const parsed = parseAddress(input, context.parseOptions);
  const syntax = context.paths.followedBy(syntaxFinding(parsed));
  if (!parsed.ok) {
    return buildVerdict(input, parsed, undefined, method, syntax.outcome, SYNCHRONOUS, context);
  }
  const fixed = testAddressVerdict(parsed);
  if (fixed !== undefined) return fixedVerdict(input, parsed, method.name, fixed, 'test_address');
  const facts: AddressFacts = retryGreylisted
    ? { input, parsed, retryGreylisted }
    : { input, parsed };
  return runFrom(0, syntax, facts, method, context, signal, SYNCHRONOUS);
}

/**
 * The start time of a verification that never waited. The clock is read only once a checker
 * does I/O: a synchronous verification takes about a microsecond, reading the clock twice
 * cost a tenth of that (bench/), and its duration rounds to 0.000 s on the wire anyway.
 */
const SYNCHRONOUS = -1;

/** Runs checkers from `index` on, synchronously until one returns a promise. */
function runFrom(
  index: number,
  path: FindingPath,
  facts: AddressFacts,
  method: Method,
  context: EngineContext,
  signal: AbortSignal | undefined,
  started: number,
): Verdict | Promise<Verdict> {
  const { checkers } = method;
  for (let i = index; i < checkers.length; i++) {
    const result: CheckResult = (checkers[i] as Checker).run(facts, context.ports, signal);
    if (result instanceof Promise) {
      const startedAt = started === SYNCHRONOUS ? context.clock.now() : started;
      return result.then((finding) => {
        const next = path.followedBy(finding);
        return finding.status === 'fail'
          ? verdictOf(facts, method, next, startedAt, context)
          : runFrom(i + 1, next, facts, method, context, signal, startedAt);
      });
    }
    path = path.followedBy(result);
    if (result.status === 'fail') break;
  }
  return verdictOf(facts, method, path, started, context);
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
