import { existsSync } from 'node:fs';
import { createEngine, type EngineOptions } from '../compose/engine.js';
import { optional } from '../optional.js';
import type { Logger } from '../ports/logger.js';
import type { Observer } from '../ports/observer.js';
import type { Store } from '../ports/store.js';
import type { BatchOptions } from '../service/batch/batch.js';
import type { AccountInfo } from '../service/account.js';
import { ServiceError } from '../service/service-error.js';
import { createService } from '../compose/service.js';
import type { Service } from '../service/service.js';
import { UsageError } from './exit-codes.js';

/** The flags of every command that works on a service: its SQLite file, or its Redis. */
export interface FileFlags {
  readonly db: string;
  /** A Redis URL: the service's store is there (mailverdict/redis), not in `db`. */
  readonly redis?: string;
  readonly account?: string;
}

export const DEFAULT_DB = 'mailverdict.db';

/**
 * What builds a service besides its store: the engine's options, an observer, a logger, batch
 * settings.
 */
export interface ServiceParts {
  readonly engine?: EngineOptions;
  readonly observer?: Observer;
  readonly logger?: Logger;
  readonly batch?: BatchOptions;
  /** How long batch work and a SQLite write of a large job hold the event loop at a time. */
  readonly sliceMs?: number;
}

/**
 * The service on its store: a SQLite file, or Redis with `--redis`. better-sqlite3 and ioredis
 * are optional peer dependencies, loaded here only: `verify` and `batch` never need them.
 */
export async function openService(flags: FileFlags, parts: ServiceParts = {}): Promise<Service> {
  const store =
    flags.redis === undefined
      ? await sqliteStore(flags.db, parts.sliceMs)
      : await redisStore(flags.redis);
  const batch =
    parts.sliceMs === undefined ? parts.batch : { ...parts.batch, sliceMs: parts.sliceMs };
  // The engine's observer is the service's too: verdicts, DNS, SMTP and batch progress alike.
  const engine = parts.engine ?? { offline: true };
  return createService({
    engine: createEngine({
      ...engine,
      ...optional('observer', parts.observer),
      ...(parts.logger === undefined ? {} : warningsTo(parts.logger, engine)),
    }),
    store,
    ...optional('batch', batch),
    ...optional('logger', parts.logger),
  });
}

/**
 * The engine's warnings (a resolver that lies, SMTP probes without a HELO name or sender) as
 * warn lines of the process's log: serve and worker write JSON lines on stderr, and a plain
 * `mailverdict: warning:` line among them would break whatever reads them. Options that name
 * their own handler keep it.
 */
function warningsTo(logger: Logger, engine: EngineOptions): EngineOptions {
  const warn = (event: string) => (message: string) => logger.warn({ event }, message);
  return {
    onWarning: engine.onWarning ?? warn('dns.warning'),
    smtpOptions: { onWarning: warn('smtp.warning'), ...engine.smtpOptions },
  };
}

async function sqliteStore(path: string, sliceMs: number | undefined): Promise<Store> {
  let createSqliteStore: typeof import('../adapters/sqlite/store.js').createSqliteStore;
  try {
    ({ createSqliteStore } = await import('../adapters/sqlite/store.js'));
  } catch (error) {
    throw new UsageError(
      `the service commands need better-sqlite3 (npm install better-sqlite3@12): ${(error as Error).message}`,
    );
  }
  try {
    return createSqliteStore(path, optional('sliceMs', sliceMs));
  } catch (error) {
    // A missing folder, a directory, a file we may not write: the path is what to fix.
    throw new UsageError(`cannot open ${JSON.stringify(path)}: ${(error as Error).message}`);
  }
}

async function redisStore(url: string): Promise<Store> {
  let createRedisStore: typeof import('../adapters/redis/store.js').createRedisStore;
  try {
    ({ createRedisStore } = await import('../adapters/redis/store.js'));
  } catch (error) {
    throw new UsageError(
      `--redis needs ioredis (npm install ioredis@5): ${(error as Error).message}`,
    );
  }
  return createRedisStore(requireRedisUrl(url));
}

/** A redis:// or rediss:// URL, checked before anything connects. */
export function requireRedisUrl(url: string): string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || !['redis:', 'rediss:'].includes(parsed.protocol)) {
    throw new UsageError(
      `--redis must be a redis:// or rediss:// URL, got ${JSON.stringify(redacted(url))}`,
    );
  }
  return url;
}

/** Where the service lives, for messages: the file, or the Redis URL without its password. */
export function storeName(flags: FileFlags): string {
  return flags.redis === undefined ? flags.db : redacted(flags.redis);
}

/**
 * The URL without its secrets, for messages: no password (in the userinfo or as a
 * `?password=` parameter, which ioredis honours) and no query at all.
 */
function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    const user =
      parsed.username === '' ? '' : `${parsed.username}${parsed.password === '' ? '' : ':***'}@`;
    return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return '(an unreadable URL)';
  }
}

/** The account the command is about: --account, or the file's only one. */
export async function accountOf(service: Service, flags: FileFlags): Promise<AccountInfo> {
  if (flags.account !== undefined) {
    try {
      return await service.admin.getAccount(flags.account);
    } catch (error) {
      if (error instanceof ServiceError && error.status === 404) {
        throw new UsageError(`no account ${JSON.stringify(flags.account)} in ${storeName(flags)}`);
      }
      throw error;
    }
  }
  const accounts = await service.admin.listAccounts();
  if (accounts.length === 1) return accounts[0] as AccountInfo;
  if (accounts.length === 0) {
    throw new UsageError(
      `${storeName(flags)} has no account yet: start \`mailverdict serve\` once to create one`,
    );
  }
  throw new UsageError(
    `${storeName(flags)} has ${accounts.length} accounts: choose one with --account (${accounts.map((a) => a.id).join(', ')})`,
  );
}

/** Runs `work` on the service of the file and closes it, whatever happens. */
export async function withService<T>(
  flags: FileFlags,
  work: (service: Service) => Promise<T>,
): Promise<T> {
  // An admin command never creates a service file by mistake: only `serve` starts one.
  if (flags.redis === undefined && !existsSync(flags.db)) {
    throw new UsageError(
      `${flags.db} has no account yet: start \`mailverdict serve\` once to create it (the file does not exist)`,
    );
  }
  const service = await openService(flags);
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
