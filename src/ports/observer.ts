import type { ProbeClass } from './smtp.js';

/** The kind of DNS lookup an observer is told of. */
export type DnsLookupKind = 'mx' | 'addresses';

/** A change in a batch job's life an observer is told of. */
export type JobEvent = 'started' | 'completed' | 'failed';

/** What became of one webhook attempt: sent, to be tried again, or given up. */
export type WebhookOutcome = 'delivered' | 'retrying' | 'failed';

/**
 * The observer port: plain callbacks the engine, the DNS cache, the batch runner and the
 * webhook outbox call when they are given one, for metrics or logs. Every callback is
 * optional, synchronous and must not throw; none is called when no observer is given, so an
 * engine without one pays nothing. Nothing here names a metrics library: the Prometheus
 * adapter (adapters/prometheus/metrics.ts) is one implementation.
 */
export interface Observer {
  /** One verdict the engine reached (verify, verifySync and each of verifyMany's). */
  onVerdict?(verdict: {
    readonly method: string;
    readonly state: string;
    readonly reason: string;
  }): void;
  /** A lookup the DNS cache could not answer, asked of the resolver behind it. */
  onDnsQuery?(kind: DnsLookupKind): void;
  /** A lookup the DNS cache answered without a query of its own (kept, or one in flight). */
  onDnsCacheHit?(kind: DnsLookupKind): void;
  /**
   * One SMTP probe of a domain: the class of its first recipient's answer (`accepted`,
   * `rejected`, `no_connect`, `timeout`, ...) and the TCP connections it opened.
   */
  onSmtpSession?(outcome: ProbeClass, connections: number): void;
  /** Addresses of a batch job whose results were stored (`processed`), or a job's new status. */
  onJobProgress?(progress: { readonly processed: number; readonly event?: JobEvent }): void;
  /** One webhook attempt's outcome. */
  onWebhook?(outcome: WebhookOutcome): void;
}

/**
 * A metrics endpoint the HTTP handler serves at `GET /metrics` and tells of every request
 * (`route` is the route's name, never the path: ids stay out of labels).
 */
export interface MetricsEndpoint {
  readonly contentType: string;
  render(): Promise<string>;
  observeRequest?(route: string, method: string, status: number, seconds: number): void;
}
