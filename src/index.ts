export { parseAddress } from './address/parse.js';
export {
  MAX_ADDRESS_OCTETS,
  MAX_DOMAIN_OCTETS,
  MAX_INPUT_LENGTH,
  MAX_LABEL_OCTETS,
  MAX_LOCAL_OCTETS,
} from './address/limits.js';
export type { ParseAddressOptions, ParsedAddress, ParseResult } from './address/parse.js';
export { PARSE_ERROR_CODES } from './address/errors.js';
export type { ParseErrorCode, ParseFailure, PartFailure } from './address/errors.js';
export { DEFAULT_PROFILE, RFC_PROFILE, PROFILES } from './address/options.js';
export type { ParseOptions, ProfileName } from './address/options.js';
export * from './checks/index.js';
export { createEngine } from './engine/engine.js';
export type { Engine, EngineOptions, VerifyOptions } from './engine/engine.js';
export { buildMethods, defaultCheckers, METHOD_NAMES } from './engine/methods.js';
export type { CheckerSet, Method, MethodName } from './engine/methods.js';
export { DELIVERABLE_CEILING, FACTOR_WEIGHTS, RISKY_BASE, SCORE_BANDS } from './engine/score.js';
export type { Evidence, State } from './engine/score.js';
export { UNKNOWN_REASONS } from './engine/verdict.js';
export type { Reason, Verdict } from './engine/verdict.js';
export { TEST_ADDRESSES } from './engine/test-addresses.js';
export { providerOf } from './engine/provider.js';
export * from './format/shapes.js';
export type * from './ports/index.js';
export { systemClock } from './ports/index.js';
export { createNodeDns, DNS_DEADLINE_MS } from './adapters/node-dns.js';
export {
  createNodeSmtp,
  BANNER_TIMEOUT_MS,
  COMMAND_TIMEOUT_MS,
  CONNECT_TIMEOUT_MS,
  MAX_CONNECTIONS,
  MAX_CONNECTIONS_PER_HOST,
  MAX_HOSTS_PER_PROBE,
  RECIPIENTS_PER_SESSION,
  RECIPIENTS_PER_TRANSACTION,
  SESSION_DEADLINE_MS,
  SMTP_PORT,
} from './adapters/node-smtp.js';
export type { NodeSmtpOptions } from './adapters/node-smtp.js';
export { batchProbes, CATCH_ALL_TTL_MS } from './engine/probe-batcher.js';
export type { ProbeBatcherOptions } from './engine/probe-batcher.js';
export type { VerifyManyOptions, VerifyManyResult } from './engine/verify-many.js';
export { classifyRcpt, classifySession } from './smtp/classify.js';
export type { ReplyClass } from './smtp/classify.js';
export { MAX_REPLY_BYTES, ReplyReader } from './smtp/reply.js';
export type { SmtpReply } from './smtp/reply.js';
export { ProbeSession } from './smtp/session.js';
export type { SessionAction, SessionPlan } from './smtp/session.js';
export { encodeCommand, UnsafeCommandError } from './smtp/commands.js';
export { isPublicAddress } from './smtp/target-policy.js';
export type { NodeDnsOptions } from './adapters/node-dns.js';
export { createCachedDns } from './dns/cached-dns.js';
export type { CachedDnsOptions } from './dns/cached-dns.js';
export { offlineDns } from './dns/offline-dns.js';
export { createService, FILTERS_PER_PAGE, MAX_FILTERS_PER_PAGE } from './service/service.js';
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
  WebhookSecretAdmin,
} from './service/service.js';
export { signWebhook, WEBHOOK_RETRY_SCHEDULE_MS } from './service/batch/webhooks.js';
export { ServiceError, SERVICE_ERROR_STATUS } from './service/service-error.js';
export type { ServiceErrorCode } from './service/service-error.js';
export { PLANS, PLAN_NAMES, PUBLIC_KEY_DAILY_LIMIT } from './service/plans.js';
export type { Plan, PlanName } from './service/plans.js';
export type { RateLimitStatus } from './service/rate-limits.js';
export { billingPeriod } from './service/billing-period.js';
export type { BillingPeriod } from './service/billing-period.js';
export { hashKey } from './service/api-keys.js';
export type { KeyKind } from './service/api-keys.js';
export type { LedgerOutcome, LedgerRequest } from './service/ledger.js';
export { createMemoryStore } from './store/memory-store.js';
export { StoreError } from './store/store-error.js';
export type { StoreErrorCode } from './store/store-error.js';
