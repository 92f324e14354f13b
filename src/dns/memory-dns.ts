import type { Dns, MxAnswer } from '../ports/dns.js';

/** Zones for the in-memory Dns: a domain maps to MX hosts, an answer, or nothing (NXDOMAIN). */
export type MemoryZones = Readonly<Record<string, MxAnswer | readonly string[]>>;

export interface MemoryDns extends Dns {
  /** Every domain asked for, in order: for asserting on lookups in tests. */
  readonly queries: readonly string[];
  /** Adds or replaces a domain's answer. */
  set(domain: string, answer: MxAnswer | readonly string[]): void;
  /** Sets the IP addresses of a mail host (for SMTP probes in tests). */
  setAddresses(host: string, addresses: readonly string[]): void;
  addresses(host: string, signal?: AbortSignal): Promise<readonly string[]>;
}

/**
 * A Dns for tests: answers from a table, no socket. A list of host names means MX records in
 * that priority order; an unlisted domain is NXDOMAIN. `hostAddresses` gives mail hosts their
 * IP addresses, for SMTP probes against a test server.
 *
 * @example
 * const dns = createMemoryDns(
 *   { 'example.org': ['mx1.example.org'], 'down.test': { kind: 'failure', code: 'timeout' } },
 *   { 'mx1.example.org': ['127.0.0.1'] },
 * );
 * const engine = createEngine({ dns });
 */
export function createMemoryDns(
  zones: MemoryZones = {},
  hostAddresses: Readonly<Record<string, readonly string[]>> = {},
): MemoryDns {
  const table = new Map<string, MxAnswer>();
  const addresses = new Map<string, readonly string[]>(
    Object.entries(hostAddresses).map(([host, ips]) => [host.toLowerCase(), ips]),
  );
  const queries: string[] = [];
  const set = (domain: string, answer: MxAnswer | readonly string[]) => {
    table.set(domain.toLowerCase(), toAnswer(answer));
  };
  for (const [domain, answer] of Object.entries(zones)) set(domain, answer);
  return {
    queries,
    set,
    setAddresses: (host, ips) => addresses.set(host.toLowerCase(), ips),
    addresses(host, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      return Promise.resolve(addresses.get(host.toLowerCase()) ?? []);
    },
    mx(domain, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      queries.push(domain);
      return Promise.resolve(table.get(domain.toLowerCase()) ?? { kind: 'nxdomain' });
    },
  };
}

function toAnswer(answer: MxAnswer | readonly string[]): MxAnswer {
  if (!Array.isArray(answer)) return answer as MxAnswer;
  return {
    kind: 'records',
    hosts: (answer as readonly string[]).map((exchange, index) => ({
      exchange,
      priority: (index + 1) * 10,
    })),
  };
}
