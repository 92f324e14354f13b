import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { createSqliteStore } from '../../src/adapters/sqlite/store.js';
import { createEngine, type EngineOptions } from '../../src/compose/engine.js';
import { createService } from '../../src/compose/service.js';
import type { Store } from '../../src/ports/store.js';
import { ServiceError } from '../../src/service/service-error.js';
import { type BatchOptions, type NewAccount, type Service } from '../../src/service/service.js';
import { createMemoryStore } from '../../src/store/memory-store.js';

/**
 * The service under test: a service with accounts and keys on demand, the stores the service
 * tests run on, and the refusals they expect.
 */

/** A service on `store` with helpers to make accounts and keys. */
export interface ApiFixture {
  readonly service: Service;
  readonly store: Store;
  /** A new account (enterprise, 1,000 credits unless told) and a private key of it. */
  account(input?: Partial<NewAccount>): Promise<{ accountId: string; secret: string }>;
  publicKey(accountId: string, trustedDomains: readonly string[]): Promise<string>;
}

export async function apiFixture(
  store: Store = createMemoryStore(),
  engine: EngineOptions = { offline: true },
  batch: BatchOptions = {},
): Promise<ApiFixture> {
  const service = createService({ engine: createEngine(engine), store, batch });
  let accounts = 0;
  return {
    service,
    store,
    async account(input = {}) {
      const account = await service.admin.createAccount({
        email: `ops${accounts++}@example.org`,
        plan: 'enterprise',
        credits: 1000,
        ...input,
      });
      const { secret } = await service.admin.createKey(account.id);
      return { accountId: account.id, secret };
    },
    async publicKey(accountId, trustedDomains) {
      const { secret } = await service.admin.createKey(accountId, {
        kind: 'public',
        trustedDomains,
      });
      return secret;
    },
  };
}

export interface Fixture {
  readonly service: Service;
  readonly accountId: string;
  /** A private key of the account, unrestricted. */
  readonly secret: string;
}

/** A service on `store` (memory by default) with one account (100 credits) and one private key. */
export async function fixture(
  options: {
    engine?: EngineOptions;
    store?: Store;
    account?: Partial<NewAccount>;
  } = {},
): Promise<Fixture> {
  const api = await apiFixture(options.store, options.engine);
  const { accountId, secret } = await api.account({
    email: 'ops@example.org',
    credits: 100,
    ...options.account,
  });
  return { service: api.service, accountId, secret };
}

/** The stores the service tests run on: memory, and SQLite in memory. */
export const STORES: [string, () => Store][] = [
  ['memory', () => createMemoryStore()],
  ['sqlite', () => createSqliteStore(':memory:')],
];

/**
 * The stores on disk: memory, and SQLite on a file of its own per store (WAL, as `serve` runs
 * it: what concurrency and locking tests need), in a temporary folder removed after the test
 * file's tests. Call it at the top level of a test file.
 */
export function storesOnDisk(name: string): [string, () => Store][] {
  const dir = mkdtempSync(join(tmpdir(), `mailverdict-${name}-`));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let files = 0;
  return [
    ['memory', () => createMemoryStore()],
    ['sqlite', () => createSqliteStore(join(dir, `${name}-${files++}.db`))],
  ];
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

/** A stream of text (a job's results) read to its end. */
export async function text(chunks: AsyncIterable<string>): Promise<string> {
  let all = '';
  for await (const chunk of chunks) all += chunk;
  return all;
}
