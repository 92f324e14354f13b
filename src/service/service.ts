import type { Engine } from '../engine/engine.js';
import { systemClock, type Clock } from '../ports/clock.js';
import { silentLogger, type Logger } from '../ports/logger.js';
import type { Observer } from '../ports/observer.js';
import type { Store } from '../ports/store.js';
import { createAccounts, type Accounts } from './account.js';
import { createAdmin, type ServiceAdmin } from './admin.js';
import { cryptoRandomBytes, type RandomBytes } from './api-keys.js';
import { createAuth, type Auth } from './auth.js';
import {
  createBatches,
  type BatchOptions,
  type Batches,
  type BatchWork,
  type DefaultWebhookSender,
} from './batch/batch.js';
import { createWebhookSecretAdmin, type WebhookSecretAdmin } from './batch/webhook-secret.js';
import { createCharging, type Charging } from './charging.js';
import { createContext } from './context.js';
import { createFilters, type Filters } from './filters.js';
import { PUBLIC_KEY_DAILY_LIMIT } from './plans.js';
import { createRateLimits } from './rate-limits.js';
import { invalidRequest } from './service-error.js';
import { requireInteger, requireObject } from './validate.js';

export type { AccountAdmin, AccountInfo, AccountObject, NewAccount } from './account.js';
export type { CreditAdmin, ServiceAdmin } from './admin.js';
export type {
  AccountRef,
  AuthRequest,
  Caller,
  Endpoint,
  KeyAdmin,
  KeyInfo,
  NewKey,
} from './auth.js';
export type { LedgerReceipt, ServiceVerifyOptions, ServiceVerifyResult } from './charging.js';
export { FILTERS_PER_PAGE, MAX_FILTERS_PER_PAGE } from './request-fields.js';
export type { FilterInfo, FilterList, NewFilter } from './filters.js';
// Batch jobs (issue 12).
export type { BatchOptions, BatchWork } from './batch/batch.js';
export type { BatchCreated, NewBatch, SubmitBatchOptions } from './batch/submit.js';
export type { BatchResults, BatchStatus, ResultsFormat, WebhookState } from './batch/results.js';
export type { BatchEvent } from './batch/webhooks.js';
export type { WebhookDelivery, WebhookSecretAdmin } from './batch/webhook-secret.js';

export interface ServiceOptions {
  /** The engine verifications run on; its method costs are the credits charged. */
  readonly engine: Engine;
  /** Where accounts, keys, the ledger, filters and rate-limit windows live. */
  readonly store: Store;
  readonly clock?: Clock;
  /** Random bytes for keys, ids and secrets. Default: the platform's CSPRNG. */
  readonly random?: RandomBytes;
  /** Requests a day per end user (client IP) of a public key. Default 10. */
  readonly publicKeyDailyLimit?: number;
  /** Batch jobs: download URLs, retention, callbacks and webhooks, runner limits. */
  readonly batch?: BatchOptions;
  /**
   * Told of batch job progress and webhook attempts (metrics: adapters/prometheus/metrics.ts).
   * Default: the engine's observer, which is told of verdicts, DNS and SMTP.
   */
  readonly observer?: Observer;
  /**
   * Told of each batch job's life (submitted, resumed, completed, failed), every webhook
   * attempt and the errors of background work, one structured line each (a pino logger is
   * one). Default: none, and the service says nothing.
   */
  readonly logger?: Logger;
}

/**
 * The verification API without HTTP (the /v1 API's operations): every refusal is a ServiceError.
 */
export interface Service
  extends
    Pick<Auth, 'authenticate' | 'rateLimitStatus'>,
    Charging,
    Pick<Accounts, 'account'>,
    Pick<Filters, 'createFilter' | 'listFilters' | 'deleteFilter'>,
    Batches {
  readonly admin: ServiceAdmin & WebhookSecretAdmin;
  readonly engine: Engine;
  readonly store: Store;
  /**
   * Starts the background work: resumes batch jobs a restart interrupted (from what is
   * stored: finished addresses are neither verified nor charged again), then delivers due
   * webhooks and purges expired results on a timer. Call it once the service is built.
   */
  start(): Promise<{ resumed: number }>;
  /** Stops it; running jobs stay `processing` and resume on the next `start()`. */
  stop(): Promise<void>;
  /** Whether `start()` has run and `stop()` not since (readiness: `GET /ready`). */
  readonly started: boolean;
  /** Batch work for hosts and tests: wait for idle, deliver due webhooks now, purge now. */
  readonly batchWork: Omit<BatchWork, 'start' | 'stop'>;
}

/** The ports a service falls back on when its options give none: the package's are Node's. */
export interface ServiceDefaults {
  /** The webhook sender, made for the batch options' SSRF policy. */
  readonly webhookSender: DefaultWebhookSender;
}

/**
 * The service core: keys, plans and rate limits, credits, filters and accounts around an
 * engine, on any Store. Each capability is its own module (auth, charging, filters, account,
 * admin) over one shared context; this only puts them together. Pure over its ports: the
 * package's `createService` is this with the Node defaults.
 */
export function buildService(serviceOptions: ServiceOptions, defaults: ServiceDefaults): Service {
  const options = checkedOptions(serviceOptions);
  const { engine, store } = options;
  const ctx = createContext({
    engine,
    store,
    clock: options.clock ?? systemClock,
    random: options.random ?? cryptoRandomBytes,
    rateLimits: createRateLimits(store, options.publicKeyDailyLimit ?? PUBLIC_KEY_DAILY_LIMIT),
    observer: options.observer ?? engine.observer,
    logger: options.logger ?? silentLogger,
  });
  const auth = createAuth(ctx);
  const filters = createFilters(ctx);
  const accounts = createAccounts(ctx);
  const charging = createCharging(ctx, filters);
  const batches = createBatches(ctx, filters, options.batch, defaults.webhookSender);
  let started = false;
  return {
    engine,
    store,
    admin: { ...createAdmin(ctx, accounts.admin, auth.keys), ...createWebhookSecretAdmin(ctx) },
    authenticate: auth.authenticate,
    rateLimitStatus: auth.rateLimitStatus,
    verify: charging.verify,
    account: accounts.account,
    createFilter: filters.createFilter,
    listFilters: filters.listFilters,
    deleteFilter: filters.deleteFilter,
    submitBatch: batches.submitBatch,
    batchStatus: batches.batchStatus,
    redeliverWebhook: batches.redeliverWebhook,
    batchResults: batches.batchResults,
    async start() {
      const outcome = await batches.work.start();
      started = true;
      return outcome;
    },
    async stop() {
      started = false;
      await batches.work.stop();
    },
    get started() {
      return started;
    },
    batchWork: batches.work,
  };
}

/**
 * The options, each checked before the service is built: a missing store or engine is an
 * invalid_request naming it rather than a TypeError at the first request, and a daily limit of
 * NaN (which every count compares below) cannot leave public keys unlimited.
 */
function checkedOptions(value: unknown): ServiceOptions {
  const options = requireObject(value, 'options');
  const hasMethods = (part: unknown, names: readonly string[]) =>
    typeof part === 'object' &&
    part !== null &&
    names.every((name) => typeof (part as Record<string, unknown>)[name] === 'function');
  if (!hasMethods(options.engine, ['verify', 'verifySync', 'parse', 'cost'])) {
    throw invalidRequest('engine', 'engine must be an Engine from createEngine()');
  }
  if (!hasMethods(options.store, ['applyLedger', 'commitLedger', 'rateCounter', 'getAccount'])) {
    throw invalidRequest(
      'store',
      'store must be a Store (createMemoryStore, createSqliteStore, ...)',
    );
  }
  if (options.clock !== undefined && !hasMethods(options.clock, ['now'])) {
    throw invalidRequest('clock', 'clock must be an object with a now() method');
  }
  if (options.random !== undefined && typeof options.random !== 'function') {
    throw invalidRequest('random', 'random must be a function returning random bytes');
  }
  if (
    options.observer !== undefined &&
    (typeof options.observer !== 'object' || options.observer === null)
  ) {
    throw invalidRequest('observer', 'observer must be an object');
  }
  if (
    options.logger !== undefined &&
    !hasMethods(options.logger, ['debug', 'info', 'warn', 'error'])
  ) {
    throw invalidRequest('logger', 'logger must have debug, info, warn and error methods');
  }
  if (options.publicKeyDailyLimit !== undefined) {
    requireInteger(
      options.publicKeyDailyLimit,
      'public_key_daily_limit',
      1,
      Number.MAX_SAFE_INTEGER,
    );
  }
  return options as unknown as ServiceOptions;
}
