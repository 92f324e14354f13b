import { createMemoryDns, type MemoryZones } from '../../src/dns/memory-dns.js';
import type { Dns, MxAnswer } from '../../src/ports/dns.js';
import type { SmtpProber } from '../../src/ports/smtp.js';

/**
 * Fakes of the ports that the twins in mailverdict/testing do not cover: a DNS that waits, and
 * ports that count their calls. The clock is mailverdict/testing's createManualClock.
 */

/**
 * A Dns whose MX answers wait until `open()` (or until the call's signal aborts, as a real
 * resolver's would): a job stays processing, or a verify in flight, while the test looks.
 * `asked` lists the domains whose MX was asked, in order; `hosts` gives mail hosts'
 * addresses, answered at once (without it the Dns resolves no hosts).
 */
export function gatedDns(
  zones: MemoryZones,
  hosts?: Record<string, readonly string[]>,
): Dns & { open(): void; readonly asked: readonly string[] } {
  const inner = createMemoryDns(zones, hosts);
  const asked: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return {
    asked,
    async mx(domain, signal): Promise<MxAnswer> {
      asked.push(domain);
      await (signal === undefined ? gate : Promise.race([gate, aborted(signal)]));
      return inner.mx(domain, signal);
    },
    ...(hosts === undefined
      ? {}
      : { addresses: (host: string, signal?: AbortSignal) => inner.addresses(host, signal) }),
    open: () => release(),
  };
}

/** Rejects with the signal's reason once it aborts. */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason as Error);
    else signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
}

/** Wraps a Dns to count every call, proving which requests never reach it. */
export function countingDns(inner: Dns): Dns & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    mx(domain, signal) {
      calls.push(`mx ${domain}`);
      return inner.mx(domain, signal);
    },
    addresses(host, signal) {
      calls.push(`addresses ${host}`);
      return inner.addresses?.(host, signal) ?? Promise.resolve([]);
    },
  };
}

/** Wraps a prober to count every probe (its recipients, comma-joined). */
export function countingSmtp(inner: SmtpProber): SmtpProber & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    probe(request, signal) {
      calls.push(request.recipients.map((r) => r.address).join(','));
      return inner.probe(request, signal);
    },
  };
}
