/** One mail exchanger from an MX record. */
export interface MxHost {
  /** Lowercase host name, no trailing dot. */
  readonly exchange: string;
  readonly priority: number;
}

/**
 * What DNS says about where a domain's mail goes. Every expected outcome is an answer, never
 * an exception: only a bug (or an abort through the signal) rejects.
 */
export type MxAnswer =
  /** MX records, sorted by priority (lowest first). */
  | { readonly kind: 'records'; readonly hosts: readonly MxHost[] }
  /** RFC 7505: a single MX of "." declares that the domain accepts no mail. */
  | { readonly kind: 'null_mx' }
  /** RFC 5321 5.1: no MX, but an A or AAAA record: the domain itself is the mail host. */
  | { readonly kind: 'implicit'; readonly host: string }
  /** The domain exists but has neither MX nor address records. */
  | { readonly kind: 'no_records' }
  /** The domain does not exist. */
  | { readonly kind: 'nxdomain' }
  /** No answer could be had: never evidence that the domain is bad. */
  | { readonly kind: 'failure'; readonly code: DnsFailureCode }
  /** The Dns port is offline by design and opened no socket. */
  | { readonly kind: 'offline' };

/**
 * `unreliable`: the resolver failed its canary check (dns/canary-dns.ts), so its answer is no
 * evidence.
 */
export type DnsFailureCode = 'timeout' | 'servfail' | 'refused' | 'error' | 'unreliable';

/**
 * Whether the resolver tells the truth, by its canary check (dns/canary-dns.ts): `lying` when
 * it denies names that exist or answers for names that do not, `unreachable` when the check
 * got no answers at all, `unchecked` before any answer needed checking.
 */
export type DnsHealth =
  | { readonly status: 'unchecked' }
  | { readonly status: 'healthy' | 'unreachable'; readonly checkedAt: number }
  | {
      readonly status: 'lying';
      readonly problem: 'denies_existing_names' | 'answers_nonexistent_names';
      /** What is wrong and what it does to verdicts, for a log or a terminal. */
      readonly message: string;
      readonly checkedAt: number;
    };

/** The DNS port: every engine gets one at construction. */
export interface Dns {
  /**
   * True when this Dns answers nothing but `offline`: the mx check is then skipped without a
   * call, and an offline verification never leaves synchronous code.
   */
  readonly offline?: boolean;
  /** Never rejects for a DNS outcome: NXDOMAIN, no data and timeouts are answers. */
  mx(domain: string, signal?: AbortSignal): Promise<MxAnswer>;
  /**
   * IPv4 and IPv6 addresses of a mail host, for the SMTP prober; empty when there are none
   * or they could not be had. Optional: a Dns without it leaves the prober no host to reach.
   */
  addresses?(host: string, signal?: AbortSignal): Promise<readonly string[]>;
  /** The resolver's health by its canary, for a Dns that checks itself. */
  health?(): DnsHealth;
}
