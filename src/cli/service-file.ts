import { existsSync } from 'node:fs';
import { createEngine, type EngineOptions } from '../engine/engine.js';
import type { AccountInfo } from '../service/account.js';
import { ServiceError } from '../service/service-error.js';
import { createService, type Service } from '../service/service.js';
import { UsageError } from './exit-codes.js';

/** The flags of every command that works on a service file. */
export interface FileFlags {
  readonly db: string;
  readonly account?: string;
}

export const DEFAULT_DB = 'mailverdict.db';

/**
 * The service on a SQLite file. better-sqlite3 is an optional peer dependency, loaded here
 * only: `verify` and `batch` never need it.
 */
export async function openService(
  path: string,
  engine: EngineOptions = { offline: true },
): Promise<Service> {
  let createSqliteStore: typeof import('../adapters/sqlite-store.js').createSqliteStore;
  try {
    ({ createSqliteStore } = await import('../adapters/sqlite-store.js'));
  } catch (error) {
    throw new UsageError(
      `the service commands need better-sqlite3 (npm install better-sqlite3@12): ${(error as Error).message}`,
    );
  }
  return createService({ engine: createEngine(engine), store: createSqliteStore(path) });
}

/** The account the command is about: --account, or the file's only one. */
export async function accountOf(service: Service, flags: FileFlags): Promise<AccountInfo> {
  if (flags.account !== undefined) {
    try {
      return await service.admin.getAccount(flags.account);
    } catch (error) {
      if (error instanceof ServiceError && error.status === 404) {
        throw new UsageError(`no account ${JSON.stringify(flags.account)} in ${flags.db}`);
      }
      throw error;
    }
  }
  const accounts = await service.admin.listAccounts();
  if (accounts.length === 1) return accounts[0] as AccountInfo;
  if (accounts.length === 0) {
    throw new UsageError(
      `${flags.db} has no account yet: start \`mailverdict serve\` once to create one`,
    );
  }
  throw new UsageError(
    `${flags.db} has ${accounts.length} accounts: choose one with --account (${accounts.map((a) => a.id).join(', ')})`,
  );
}

/** Runs `work` on the service of the file and closes it, whatever happens. */
export async function withService<T>(
  flags: FileFlags,
  work: (service: Service) => Promise<T>,
): Promise<T> {
  // An admin command never creates a service file by mistake: only `serve` starts one.
  if (!existsSync(flags.db)) {
    throw new UsageError(
      `${flags.db} has no account yet: start \`mailverdict serve\` once to create it (the file does not exist)`,
    );
  }
  const service = await openService(flags.db);
  try {
    return await work(service);
  } finally {
    await service.store.close();
  }
}

/** A refusal of the service on the terminal: its own words, and usage's exit code for a 4xx. */
export function serviceFailure(error: unknown): UsageError | undefined {
  if (error instanceof ServiceError && error.status < 500) {
    return new UsageError(error.message);
  }
  return undefined;
}
