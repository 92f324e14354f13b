import { expect } from 'vitest';
import { createEngine, type EngineOptions } from '../../src/compose/engine.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import type { Dns, MxAnswer } from '../../src/ports/dns.js';
import type { SmtpProber } from '../../src/ports/smtp.js';
import type { Store } from '../../src/ports/store.js';
import { createService } from '../../src/compose/service.js';
import { type NewAccount, type Service } from '../../src/service/service.js';
import { ServiceError } from '../../src/service/service-error.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { createSqliteStore } from '../../src/adapters/sqlite/store.js';

export interface Fixture {
  readonly service: Service;
  readonly accountId: string;
  /** A private key of the account, unrestricted. */
  readonly secret: string;
}

/** A service on `store` (memory by default) with one account and one private key. */
export async function fixture(
  options: {
    engine?: EngineOptions;
    store?: Store;
    account?: Partial<NewAccount>;
  } = {},
): Promise<Fixture> {
  const service = createService({
    engine: createEngine(options.engine ?? { offline: true }),
    store: options.store ?? createMemoryStore(),
  });
  const account = await service.admin.createAccount({
    email: 'ops@example.org',
    plan: 'enterprise',
    credits: 100,
    ...options.account,
  });
  const { secret } = await service.admin.createKey(account.id);
  return { service, accountId: account.id, secret };
}

/** Wraps ports to count every call, proving which requests never reach them. */
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

/** The ServiceError a promise rejects with (failing the test if it resolves or throws else). */
export async function refusal(promise: Promise<unknown>): Promise<ServiceError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ServiceError);
  return error as ServiceError;
}

/**
 * A Dns whose MX answers wait until `open()`: a job stays processing while the test looks.
 * `asked` lists the domains whose MX was asked, in order; `hosts` gives mail hosts'
 * addresses, answered at once (without it the Dns resolves no hosts, as gatedDns always did).
 */
export function gatedDns(
  zones: Record<string, readonly string[]>,
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
      await gate;
      return inner.mx(domain, signal);
    },
    ...(hosts === undefined
      ? {}
      : { addresses: (host: string, signal?: AbortSignal) => inner.addresses(host, signal) }),
    open: () => release(),
  };
}

/**
 * Waits until `condition()` holds, looking after each timer turn, and fails the test if it
 * does not within `turns` of them: for what must happen while something else never answers.
 */
export async function eventually(condition: () => boolean, what: string, turns = 500) {
  for (let turn = 0; turn < turns && !condition(); turn++) {
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  expect(condition(), what).toBe(true);
}

/** A stream of text (a job's results) read to its end. */
export async function text(chunks: AsyncIterable<string>): Promise<string> {
  let all = '';
  for await (const chunk of chunks) all += chunk;
  return all;
}

/** The stores the service tests run on: memory, and SQLite in memory. */
export const STORES: [string, () => Store][] = [
  ['memory', () => createMemoryStore()],
  ['sqlite', () => createSqliteStore(':memory:')],
];
