import { getServers, Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { raceAbort } from '../../dns/abortable.js';
import { Fifo } from '../../fifo.js';
import type { Dns, DnsFailureCode, MxAnswer, MxHost } from '../../ports/dns.js';

/** Default deadline of one MX lookup, implicit-MX fallback included. */
export const DNS_DEADLINE_MS = 5_000;

/**
 * Default of maxQueriesInFlight. Answers wait in the resolver's UDP socket until the process
 * reads them, and a busy process reads late: Linux's default receive buffer (208 KB) holds
 * 256 datagrams of 100 bytes, and the kernel drops the rest (RcvbufErrors in /proc/net/snmp),
 * each a lost answer that holds its lookup until c-ares gives up on it. verifyMany had 250
 * queries in flight (a domain's MX for each of 50 slots and 200 lookups ahead), and 500 with
 * an IP filter (each domain then asks A and AAAA of its host after its MX): on a loaded
 * 2-core machine, bench/filter-batch.ts lost answers and a 150 ms job took 1.1 s.
 */
export const DNS_MAX_QUERIES_IN_FLIGHT = 200;

export interface NodeDnsOptions {
  /** Name servers as `ip` or `ip:port` (`[v6]:port`); default: the system's. */
  readonly servers?: readonly string[];
  /** Deadline of one lookup, enforced by our own timer: c-ares' timeout is per try. */
  readonly timeoutMs?: number;
  /** Tries per query inside the deadline. */
  readonly tries?: number;
  /**
   * Queries (an MX, an A, an AAAA question) sent and not yet answered, at most; the rest wait
   * their turn, in the order they were asked, within their lookup's deadline. Default
   * DNS_MAX_QUERIES_IN_FLIGHT (200).
   */
  readonly maxQueriesInFlight?: number;
}

/**
 * The Dns port on Node's c-ares resolver. Every lookup ends by its deadline with an answer:
 * NXDOMAIN, no data and timeouts are answers, not exceptions.
 */
export function createNodeDns(options: NodeDnsOptions = {}): Dns {
  const deadlineMs = options.timeoutMs ?? DNS_DEADLINE_MS;
  const tries = options.tries ?? 2;
  if (!(deadlineMs > 0) || !Number.isFinite(deadlineMs)) {
    throw new RangeError(`dnsOptions.timeoutMs must be a positive number of ms, got ${deadlineMs}`);
  }
  if (!Number.isInteger(tries) || tries < 1) {
    throw new RangeError(`dnsOptions.tries must be a whole number from 1, got ${tries}`);
  }
  const maxInFlight = options.maxQueriesInFlight ?? DNS_MAX_QUERIES_IN_FLIGHT;
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1) {
    throw new RangeError(
      `dnsOptions.maxQueriesInFlight must be a whole number from 1, got ${maxInFlight}`,
    );
  }
  const configured = options.servers !== undefined && options.servers.length > 0;
  const servers = configured ? [...options.servers] : getServers();
  // c-ares sends each try to every server in turn, doubling the timeout after each round
  // (tries x servers attempts in all), and Node checks for timeouts only on a timer of that
  // period, so an attempt lasts up to twice its timeout (measured on Node 20, c-ares 1.34:
  // 750 ms -> 1,442 ms). With several servers, each attempt gets its share of the deadline,
  // so that a silent first server leaves time to ask the next one. With one, nothing is
  // gained by giving up sooner: a slow server that answers by the deadline is still heard.
  const attemptMs = (serverCount: number) => {
    const attempts = 2 ** tries - 1;
    const share =
      serverCount > 1 ? deadlineMs / (2 * serverCount * attempts) : deadlineMs / attempts;
    return Math.min(MAX_TIMER_MS, Math.max(1, Math.floor(share)));
  };
  const resolver = new Resolver({ timeout: attemptMs(Math.max(1, servers.length)), tries });
  if (configured) resolver.setServers(servers);

  const send = queryGate(maxInFlight);
  // Node runs c-ares with ARES_FLAG_NOCHECKRESP: a server's SERVFAIL, REFUSED or NOTIMP is
  // taken as the answer and the next server is never asked (measured on Node 20, c-ares
  // 1.34). A resolver does ask it: so do we, every server at once, each on its own channel.
  let oneEach: readonly Resolver[] | undefined;
  const askFor =
    (lookup: Lookup): Ask =>
    (query) =>
      send(() => query(resolver), lookup).catch((error: unknown) => {
        if (servers.length < 2 || !SERVER_FAILURES.has(errorCode(error))) throw error;
        oneEach ??= resolver.getServers().map((server) => {
          const single = new Resolver({ timeout: attemptMs(1), tries });
          single.setServers([server]);
          return single;
        });
        return firstAnswer(
          oneEach.map((single) => send(() => query(single), lookup)),
          error,
        );
      });
  return {
    mx(domain, signal) {
      const lookup: Lookup = { over: false };
      return withDeadline(lookupMx(askFor(lookup), domain), deadlineMs, signal, TIMEOUT, lookup);
    },
    addresses(host, signal) {
      const lookup: Lookup = { over: false };
      const answer = lookupAddresses(askFor(lookup), host);
      return withDeadline(answer, deadlineMs, signal, NO_ADDRESSES, lookup);
    },
  };
}

/** Runs one c-ares query, with another server's answer when the first server fails. */
type Ask = <T>(query: (resolver: Resolver) => Promise<T>) => Promise<T>;

/** One lookup's state: `over` once its caller has an answer (records, the deadline's, an abort). */
interface Lookup {
  over: boolean;
}

/**
 * Sends queries at most `limit` at once (maxQueriesInFlight); the rest wait, in the order they
 * were asked. A query whose lookup is over by its turn is not sent: no one waits for its
 * answer, and a backlog behind a silent server would otherwise be sent after every deadline.
 */
function queryGate(limit: number): <T>(query: () => Promise<T>, lookup: Lookup) => Promise<T> {
  let inFlight = 0;
  const waiting = new Fifo<() => void>();
  const release = () => {
    inFlight--;
    while (inFlight < limit && waiting.size > 0) (waiting.shift() as () => void)();
  };
  return <T>(query: () => Promise<T>, lookup: Lookup): Promise<T> => {
    const start = (): Promise<T> => {
      if (lookup.over) return Promise.reject(LOOKUP_OVER);
      inFlight++;
      let sent: Promise<T>;
      try {
        sent = query();
      } catch (error) {
        sent = Promise.reject(error as Error);
      }
      return sent.finally(release);
    };
    if (inFlight < limit) return start();
    return new Promise<T>((resolve, reject) => {
      waiting.push(() => void start().then(resolve, reject));
    });
  };
}

/** What a query not sent rejects with: its lookup already answered (as a timeout, mostly). */
const LOOKUP_OVER = Object.assign(new Error('The lookup was over before its query was sent'), {
  code: 'ECANCELLED',
});

/** Answers of a server that could not say: another server may. */
const SERVER_FAILURES: ReadonlySet<string> = new Set([
  'ESERVFAIL',
  'EREFUSED',
  'ENOTIMP',
  'EFORMERR',
]);

/**
 * The first answer among the servers' (records, or NXDOMAIN / no data, which are answers
 * too), or `otherwise` when every server failed.
 */
function firstAnswer<T>(queries: readonly Promise<T>[], otherwise: unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let pending = queries.length;
    if (pending === 0) reject(otherwise as Error);
    const failed = () => {
      if (--pending === 0) reject(otherwise as Error);
    };
    for (const query of queries) {
      query.then(resolve, (error: unknown) => {
        const code = errorCode(error);
        if (code === 'ENOTFOUND' || code === 'ENODATA') reject(error as Error);
        else failed();
      });
    }
  });
}

const NO_ADDRESSES: readonly string[] = Object.freeze([]);
/** The longest timeout c-ares (a 32-bit signed count of ms) and setTimeout take. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A and AAAA records of a mail host, IPv4 first (still the likelier to take port 25). */
async function lookupAddresses(ask: Ask, host: string): Promise<readonly string[]> {
  // An MX exchange written as an IP address (RFC 1035 wants a name; zones do it anyway) is
  // the address the prober connects to: asking a name server about "192.0.2.7" answers
  // nothing, and IP filters would then miss the host the probe reaches.
  if (isIP(host) !== 0) return [host];
  const [v4, v6] = await Promise.allSettled([
    ask((resolver) => resolver.resolve4(host)),
    ask((resolver) => resolver.resolve6(host)),
  ]);
  return [v4, v6].flatMap((result) => (result.status === 'fulfilled' ? result.value : []));
}

async function lookupMx(ask: Ask, domain: string): Promise<MxAnswer> {
  let records: { exchange: string; priority: number }[];
  try {
    records = await ask((resolver) => resolver.resolveMx(domain));
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENODATA') return implicitMx(ask, domain);
    return failureAnswer(code);
  }
  if (records.length === 0) return implicitMx(ask, domain);
  // RFC 7505: one MX with the root as exchange (c-ares gives '') is the null MX. Beside
  // other records the root is meaningless, and only the real hosts are kept.
  const hosts = records.filter((r) => r.exchange !== '' && r.exchange !== '.');
  if (hosts.length === 0) return { kind: 'null_mx' };
  return { kind: 'records', hosts: sortHosts(hosts) };
}

/**
 * Lowercase names without the root's dot, each host once at its best priority (a zone may
 * name a host twice, or in two cases: it is one host to try), lowest priority first.
 */
function sortHosts(records: readonly { exchange: string; priority: number }[]): MxHost[] {
  const best = new Map<string, number>();
  for (const { exchange, priority } of records) {
    const name = exchange.toLowerCase().replace(/\.$/, '');
    const known = best.get(name);
    if (known === undefined || priority < known) best.set(name, priority);
  }
  return [...best]
    .map(([exchange, priority]) => ({ exchange, priority }))
    .sort(
      (a, b) =>
        a.priority - b.priority || (a.exchange < b.exchange ? -1 : a.exchange > b.exchange ? 1 : 0),
    );
}

/** RFC 5321 5.1: with no MX records, the domain's own A/AAAA records take the mail. */
async function implicitMx(ask: Ask, domain: string): Promise<MxAnswer> {
  const [v4, v6] = await Promise.allSettled([
    ask((resolver) => resolver.resolve4(domain)),
    ask((resolver) => resolver.resolve6(domain)),
  ]);
  if (
    (v4.status === 'fulfilled' && v4.value.length > 0) ||
    (v6.status === 'fulfilled' && v6.value.length > 0)
  ) {
    return { kind: 'implicit', host: domain };
  }
  const codes = [v4, v6].map((r) => (r.status === 'rejected' ? errorCode(r.reason) : 'ENODATA'));
  if (codes.every((c) => c === 'ENOTFOUND')) return { kind: 'nxdomain' };
  if (codes.every((c) => c === 'ENODATA' || c === 'ENOTFOUND')) return { kind: 'no_records' };
  return failureAnswer(codes.find((c) => c !== 'ENODATA' && c !== 'ENOTFOUND') ?? 'ESERVFAIL');
}

function failureAnswer(code: string): MxAnswer {
  if (code === 'ENOTFOUND') return { kind: 'nxdomain' };
  return { kind: 'failure', code: FAILURE_CODES[code] ?? 'error' };
}

const FAILURE_CODES: Readonly<Record<string, DnsFailureCode>> = {
  ETIMEOUT: 'timeout',
  ECANCELLED: 'timeout',
  ESERVFAIL: 'servfail',
  EREFUSED: 'refused',
  ECONNREFUSED: 'refused',
};

function errorCode(error: unknown): string {
  return typeof error === 'object' && error !== null && 'code' in error
    ? String(error.code)
    : 'EUNKNOWN';
}

/**
 * The lookup, or the timeout answer at the deadline, or the caller's abort; whichever comes
 * first makes the lookup `over`.
 */
function withDeadline<T>(
  answer: Promise<T>,
  deadlineMs: number,
  signal: AbortSignal | undefined,
  onTimeout: T,
  lookup: Lookup,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(onTimeout), Math.min(deadlineMs, MAX_TIMER_MS));
  });
  const first = Promise.race([answer, deadline]).finally(() => {
    lookup.over = true;
    clearTimeout(timer);
  });
  const answered = raceAbort(first, signal);
  // An abort answers the caller too: the lookup's queries not yet sent never will be.
  answered.catch(() => void (lookup.over = true));
  return answered;
}

const TIMEOUT: MxAnswer = Object.freeze({ kind: 'failure', code: 'timeout' });
