import type { FilterAction } from './store.js';

/**
 * A caller's own verdicts by IP address (a service account's `ip_address` filters), which the
 * engine consults once an address's mail hosts are known: after the mx check, with a domain
 * literal's address or the addresses of the domain's first three MX hosts, resolved through
 * the engine's Dns and its cache. A match skips the remaining checks and answers
 * `blocked_by_filter` or `allowed_by_filter`.
 */
export interface IpFilter {
  /**
   * The action of the filter that decides for these addresses (IPv4 or IPv6 text, as the
   * resolver or the literal gives them), or undefined when none matches.
   */
  match(ips: readonly string[], signal?: AbortSignal): Promise<FilterAction | undefined>;
}
