import { createNodeDns, type NodeDnsOptions } from '../adapters/node/dns.js';
import type { NodeSmtpOptions } from '../adapters/node/smtp.js';
import { createCachedDns } from '../dns/cached-dns.js';
import { createCanaryDns, type DnsCanaryOptions } from '../dns/canary-dns.js';
import { offlineDns } from '../dns/offline-dns.js';
import { buildEngine, type Engine, type EngineParts } from '../engine/engine.js';
import { optional } from '../optional.js';
import { systemClock, type Clock } from '../ports/clock.js';
import type { Dns } from '../ports/dns.js';
import type { Observer } from '../ports/observer.js';
import type { SmtpProber } from '../ports/smtp.js';
import { assertSmtpIdentity } from '../smtp/commands.js';
import { parseProxyUrls } from '../smtp/proxy-url.js';

// The engine as the package hands it out: the pure engine (engine/engine.ts) over the Node
// defaults, Node's resolver behind its canary and a cache, and our node:net prober, loaded
// on the first probe. Every port given in the options replaces its default.

export interface EngineOptions extends Omit<EngineParts, 'dns' | 'smtp' | 'clock'> {
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
   * evidence (dns/canary-dns.ts): its names and timings, or `false` to trust the
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
  readonly clock?: Clock;
  /**
   * Told of every verdict, of the default DNS cache's queries and hits, and of SMTP probes
   * (metrics: adapters/prometheus/metrics.ts). Default none, at no cost.
   */
  readonly observer?: Observer;
}

/**
 * Builds an engine. Every port has a Node default (the resolver, the prober); nothing touches
 * the network until `verify` is called.
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
  const dns = options.dns ?? (options.offline === true ? offlineDns() : defaultDns(options, clock));
  const smtp = options.smtp ?? (options.offline === true ? undefined : defaultProber(options, dns));
  const parts: EngineParts = { ...options, clock, dns, smtp };
  return buildEngine(parts);
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
      // Loaded on first use: engines that never probe never load the SMTP client (cold start).
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
