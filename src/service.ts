/**
 * mailverdict/service: the verification API without HTTP: keys, plans and rate limits, the credits
 * ledger, filters, batch jobs and webhooks, and the memory store. Its own entry, so that
 * engine-only users never load it (docs/architecture.md, "Entry points"); `mailverdict/sqlite` has
 * the durable store, `mailverdict/http` and `mailverdict/node` serve it.
 */
export { createService } from './compose/service.js';
export { FILTERS_PER_PAGE, MAX_FILTERS_PER_PAGE } from './service/service.js';
export type {
  AccountInfo,
  AccountObject,
  AccountRef,
  AuthRequest,
  Caller,
  Endpoint,
  FilterInfo,
  FilterList,
  KeyInfo,
  LedgerReceipt,
  NewAccount,
  NewFilter,
  NewKey,
  Service,
  ServiceAdmin,
  ServiceOptions,
  ServiceVerifyOptions,
  ServiceVerifyResult,
} from './service/service.js';
// Batch jobs (issue 12).
export type {
  BatchCreated,
  BatchEvent,
  BatchOptions,
  BatchResults,
  BatchStatus,
  NewBatch,
  ResultsFormat,
  SubmitBatchOptions,
  WebhookDelivery,
  WebhookSecretAdmin,
  WebhookState,
} from './service/service.js';
export { signWebhook, WEBHOOK_RETRY_SCHEDULE_MS } from './service/batch/webhooks.js';
// Where jobs run: in process by default; mailverdict/bullmq brings a queue runner.
export type { BatchRunner, BatchRunnerFactory, JobWork } from './ports/batch-runner.js';
export type { JobWorkSettings } from './service/batch/job-work.js';
// The logger port the service and the HTTP handler write their lines to (a pino logger is one).
export type { LogFields, Logger, LogLevel } from './ports/logger.js';
export { ServiceError, SERVICE_ERROR_STATUS } from './service/service-error.js';
export type { ServiceErrorCode } from './service/service-error.js';
export { PLANS, PLAN_NAMES, PUBLIC_KEY_DAILY_LIMIT } from './service/plans.js';
export type { Plan, PlanName } from './service/plans.js';
export type { RateLimitStatus } from './service/rate-limit-status.js';
export { billingPeriod } from './service/billing-period.js';
export type { BillingPeriod } from './service/billing-period.js';
export { hashKey } from './service/api-keys.js';
export type { KeyKind } from './service/api-keys.js';
export type { LedgerOutcome, LedgerRequest } from './store/rules/ledger.js';
export { createMemoryStore } from './store/memory-store.js';
export { StoreError } from './store/rules/store-error.js';
export type { StoreErrorCode } from './store/rules/store-error.js';
