import { createClockedLru } from '../cache/clocked-lru.js';
import { raceAbort } from '../dns/abortable.js';
import { optional } from '../optional.js';
import { systemClock, type Clock } from '../ports/clock.js';
import type {
  ProbeAnswer,
  ProbeRecipient,
  ProbeReport,
  ProbeRequest,
  SmtpProber,
} from '../ports/smtp.js';

/** How long a domain's catch-all answer is trusted. */
export const CATCH_ALL_TTL_MS = 3_600_000;

export interface ProbeBatcherOptions {
  readonly clock?: Clock;
  readonly catchAllTtlMs?: number;
  /** Domains whose catch-all answer is kept. */
  readonly maxDomains?: number;
}

interface Waiter {
  readonly from: number;
  readonly count: number;
  readonly resolve: (report: ProbeReport) => void;
  readonly reject: (error: unknown) => void;
}

interface Batch {
  readonly domain: string;
  readonly hosts: readonly string[];
  readonly recipients: ProbeRecipient[];
  catchAllProbe: ProbeRecipient | undefined;
  readonly waiters: Waiter[];
}

/**
 * Puts session reuse in front of a prober: probes of one domain asked within the same turn
 * of the event loop (a verifyMany group, or concurrent verifies released by one shared MX
 * lookup) go out as one request, so one SMTP session answers many addresses. The catch-all
 * answer of a domain is cached, so the random-address probe runs once per domain per TTL.
 */
export function batchProbes(inner: SmtpProber, options: ProbeBatcherOptions = {}): SmtpProber {
  const clock = options.clock ?? systemClock;
  const catchAlls = createClockedLru<ProbeAnswer>(clock, {
    max: options.maxDomains ?? 10_000,
    ttl: options.catchAllTtlMs ?? CATCH_ALL_TTL_MS,
  });
  const open = new Map<string, Batch>();

  function dispatch(batch: Batch): void {
    open.delete(batch.domain);
    const cached = catchAlls.get(batch.domain);
    const request: ProbeRequest = {
      domain: batch.domain,
      hosts: batch.hosts,
      recipients: batch.recipients,
      ...(cached === undefined && batch.catchAllProbe !== undefined
        ? { catchAllProbe: batch.catchAllProbe }
        : {}),
    };
    // The shared probe runs without any one caller's signal (each waiter races its own):
    // one caller giving up must not fail the others. The prober has its own deadlines.
    inner.probe(request).then(
      (report) => {
        const catchAll = cached ?? report.catchAll;
        // Only a clear answer is worth remembering; a timeout may differ next time.
        if (cached === undefined && isConclusive(report.catchAll)) {
          catchAlls.set(batch.domain, report.catchAll as ProbeAnswer);
        }
        for (const waiter of batch.waiters) {
          waiter.resolve({
            recipients: report.recipients.slice(waiter.from, waiter.from + waiter.count),
            catchAll,
            connections: report.connections,
          });
        }
      },
      (error: unknown) => {
        for (const waiter of batch.waiters) waiter.reject(error);
      },
    );
  }

  return {
    ...optional('offline', inner.offline),
    probe(request, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      let batch = open.get(request.domain);
      if (batch === undefined) {
        batch = {
          domain: request.domain,
          hosts: request.hosts,
          recipients: [],
          catchAllProbe: undefined,
          waiters: [],
        };
        open.set(request.domain, batch);
        const scheduled = batch;
        // A macrotask, not a microtask: every verify that a shared DNS answer released joins.
        setTimeout(() => dispatch(scheduled), 0);
      }
      batch.catchAllProbe ??= request.catchAllProbe;
      const from = batch.recipients.length;
      batch.recipients.push(...request.recipients);
      const target = batch;
      const report = new Promise<ProbeReport>((resolve, reject) => {
        target.waiters.push({ from, count: request.recipients.length, resolve, reject });
      });
      return raceAbort(report, signal);
    },
  };
}

function isConclusive(answer: ProbeAnswer | null): boolean {
  return answer?.class === 'accepted' || answer?.class === 'rejected';
}
