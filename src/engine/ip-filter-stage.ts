import { literalAddress } from '../address/ip-literal.js';
import type { ParsedAddress } from '../address/parse.js';
import { mailHosts } from '../checks/mx.js';
import type { Dns, MxAnswer, MxHost } from '../ports/dns.js';
import type { IpFilter } from '../ports/ip-filter.js';
import type { FilterAction } from '../ports/store.js';

/** MX hosts whose addresses an IP filter is asked about: as many as the prober tries. */
export const MX_HOSTS_FOR_IP_FILTERS = 3;

/**
 * The IP filter's action for an address whose mail hosts are known (`hosts`, as the mx check
 * found them): asked about a domain literal's own address, else about the addresses of the
 * first three hosts, resolved through `dns`. Undefined, without asking, when there is no
 * address to ask about: no hosts, or a Dns that resolves none (offline), so that nothing is
 * looked up that cannot match.
 */
export function ipFilterAction(
  parsed: ParsedAddress,
  hosts: readonly MxHost[],
  dns: Dns,
  filter: IpFilter,
  signal: AbortSignal | undefined,
): Promise<FilterAction | undefined> | undefined {
  if (parsed.domainLiteral) {
    const ip = literalAddress(parsed.asciiDomain);
    return ip === undefined ? undefined : filter.match([ip], signal);
  }
  if (hosts.length === 0 || !canResolveHosts(dns)) return undefined;
  return hostAddresses(hosts, dns, signal).then((ips) =>
    ips.length === 0 ? undefined : filter.match(ips, signal),
  );
}

/**
 * A run's IP-filter answers by domain (verifyMany): a domain's addresses share its mail
 * hosts, so the filter is asked once per domain, not once per address, and once it has
 * answered, the domain's later addresses go on without waiting (bench/: asking per address
 * had made a filtered run's engine work 1.8x that of one without).
 */
export type DomainAnswers = Map<
  string,
  FilterAction | undefined | Promise<FilterAction | undefined>
>;

/** Domains whose answers one run keeps at most. */
const REMEMBERED_DOMAINS = 10_000;

/**
 * `ipFilterAction`, asked once per domain of a run and remembered in `answers`: the action
 * itself (or undefined: none, or nothing to ask) once known, a promise until then.
 */
export function ipFilterActionOnce(
  answers: DomainAnswers,
  parsed: ParsedAddress,
  hosts: readonly MxHost[],
  dns: Dns,
  filter: IpFilter,
  signal: AbortSignal | undefined,
): FilterAction | undefined | Promise<FilterAction | undefined> {
  const domain = parsed.asciiDomain;
  if (answers.has(domain)) return answers.get(domain);
  if (answers.size >= REMEMBERED_DOMAINS) answers.clear();
  const answer = ipFilterAction(parsed, hosts, dns, filter, signal);
  answers.set(domain, answer);
  answer?.then(
    (action) => answers.set(domain, action),
    // A failed ask is no answer: the next address of the domain asks again.
    () => answers.delete(domain),
  );
  return answer;
}

/**
 * `ipFilterAction` for an address whose MX hosts are not known yet: looks them up first,
 * through the same Dns (and cache) its verification then uses. For a caller that must know
 * whether a filter answers before it starts the verification (a charge reserved only for
 * work that is not free).
 */
export async function ipFilterActionOf(
  parsed: ParsedAddress,
  dns: Dns,
  filter: IpFilter,
  signal: AbortSignal | undefined,
): Promise<FilterAction | undefined> {
  const hosts =
    parsed.domainLiteral || !canResolveHosts(dns)
      ? []
      : mailHosts(await dns.mx(parsed.asciiDomain, signal));
  return ipFilterAction(parsed, hosts, dns, filter, signal);
}

/**
 * Whether an IP filter could be asked about this address at all: a domain literal carries
 * its address; any other needs a Dns that resolves mail hosts (none offline).
 */
export function ipFilterApplies(parsed: ParsedAddress, dns: Dns): boolean {
  return parsed.domainLiteral || canResolveHosts(dns);
}

/**
 * Looks up the addresses `ipFilterAction` will ask about for a domain's MX answer, so that a
 * batch's next domains have them cached before their turn.
 */
export function prefetchHostAddresses(answer: MxAnswer, dns: Dns): Promise<unknown> {
  const hosts = mailHosts(answer);
  return hosts.length === 0 || !canResolveHosts(dns)
    ? Promise.resolve()
    : hostAddresses(hosts, dns, undefined);
}

/** Whether `dns` can give the addresses of mail hosts: not offline, and resolving hosts. */
export function canResolveHosts(dns: Dns): boolean {
  return dns.offline !== true && dns.addresses !== undefined;
}

/** The addresses of the first MX_HOSTS_FOR_IP_FILTERS hosts, all families. */
async function hostAddresses(
  hosts: readonly MxHost[],
  dns: Dns,
  signal: AbortSignal | undefined,
): Promise<readonly string[]> {
  const lists = await Promise.all(
    hosts
      .slice(0, MX_HOSTS_FOR_IP_FILTERS)
      .map((host) => dns.addresses?.(host.exchange, signal) ?? []),
  );
  return lists.flat();
}
