/**
 * mailverdict/client: the /v1 API from any runtime with fetch (Node 20+, browsers, Deno, Bun,
 * workers): typed calls, the API's retry rules, idempotent batch submissions, polling,
 * streamed results and webhook verification. Imports no `node:*` module and nothing of the
 * engine or the service (their types only).
 */
export { createClient, DEFAULT_POLL_MS, SMTP_VERIFY_TIMEOUT_MS } from './client/client.js';
export type {
  Client,
  ClientOptions,
  ResultsDownload,
  ResultsOptions,
  WaitOptions,
} from './client/client.js';
export { ApiError, NetworkError } from './client/errors.js';
export type { NetworkErrorCode } from './client/errors.js';
export { newIdempotencyKey } from './client/idempotency-key.js';
export type {
  AnyVerifyResult,
  CallOptions,
  FilterQuery,
  NewFilter,
  ResultsFormat,
  ShapeAOptions,
  ShapeBOptions,
  SubmitBatchOptions,
  VerifyAnswer,
  VerifyOptions,
} from './client/requests.js';
export {
  BACKOFF_BASE_MS,
  BACKOFF_MAX_MS,
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_AFTER_MS,
} from './client/retry.js';
export { DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT_MS } from './client/transport.js';
export type * from './client/types.js';
export { verifyWebhook, WEBHOOK_TOLERANCE_S, WebhookVerificationError } from './client/webhooks.js';
export type {
  VerifyWebhookOptions,
  WebhookHeaders,
  WebhookVerificationErrorCode,
} from './client/webhooks.js';
