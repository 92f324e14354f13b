/**
 * The /v1 API's answers as the client receives them, snake_case as on the wire. The verdict
 * shapes are the engine's own types (imported as types only: nothing of the engine is loaded);
 * the rest mirror the OpenAPI document, and test/client/openapi-drift.test.ts fails when a
 * field is in one and not the other.
 */
import type {
  CompactResult,
  DetailedField,
  DetailedResult,
  ResultRecord,
  ShapeBResult,
} from '../format/shapes.js';

export type { CompactResult, DetailedField, DetailedResult, ResultRecord, ShapeBResult };
export type { MethodName } from '../engine/methods.js';
export type { State } from '../engine/score.js';
export type { Reason } from '../engine/verdict.js';
export type { RiskFactor } from '../checks/checker.js';

/**
 * One record of a batch's results as downloaded: the address as submitted (`input`), the
 * verdict's record (the detailed shape, `risk_factors`, `error`), and `duplicate: true` where
 * the address repeats an earlier one of the job (whose record it then carries).
 */
export interface BatchRecord extends ResultRecord {
  input: string;
  duplicate?: true;
}

/** Where a batch job is: `processing` until every address has its result, or it failed. */
export type BatchState = 'processing' | 'completed' | 'failed';

/** `POST /v1/verify`: the job was accepted. */
export interface BatchCreated {
  id: string;
  status: 'processing';
  total_emails: number;
  message: string;
}

/** `GET /v1/verify/{id}`: a job's progress. */
export interface BatchStatus {
  id: string;
  status: BatchState;
  total_emails: number;
  processed: number;
  /** Whole percents, rounded down: 100 only when every address has its result. */
  percent_complete: number;
  valid: number;
  invalid: number;
  risky: number;
  /** Where the results are, once completed (the client fetches them from its own baseUrl). */
  download_url?: string;
  /** Why a failed job failed. */
  reason?: string;
  /** With a callback_url: where the delivery of its webhook stands. */
  webhook?: BatchWebhook;
}

/** The delivery of a job's webhook (`GET /v1/verify/{id}`'s `webhook`). */
export interface BatchWebhook {
  /** `pending` until delivered; `failed` once its attempts ran out (redeliverWebhook sends it again). */
  status: 'pending' | 'delivered' | 'failed';
  /** Attempts since it was queued, or queued again. */
  attempts: number;
  /** The HTTP status the last attempt was answered with; null without one. */
  last_status: number | null;
  /** Why the last attempt was not a delivery (`HTTP 500`, `timeout: ...`); null if it was. */
  last_error: string | null;
  /** When a pending webhook is tried next (ISO 8601); null once delivered or failed. */
  next_attempt_at: string | null;
}

export type FilterType = 'email' | 'domain' | 'ip_address';
export type FilterAction = 'block' | 'allow';

/** A block or allow filter of the account. */
export interface Filter {
  id: string;
  filter_type: FilterType;
  /** Normalized: emails and IDN domains as the parser writes them, IPs and ranges canonical. */
  value: string;
  action: FilterAction;
  reason: string | null;
  /** ISO 8601. */
  created_at: string;
}

/** `GET /v1/filters`: one page, in a stable order. */
export interface FilterPage {
  filters: Filter[];
  total: number;
  page: number;
  per_page: number;
}

/** `DELETE /v1/filters/{id}`. */
export interface FilterDeleted {
  id: string;
  deleted: true;
}

export type Plan = 'free' | 'starter' | 'professional' | 'enterprise';

/** `GET /v1/account`: available + reserved + used = total. */
export interface Account {
  email: string;
  plan: Plan;
  credits: { available: number; reserved: number; used: number; total: number };
  rate_limit: { per_minute: number; remaining: number };
  /** `YYYY-MM-DD` (UTC); `end` is the last day of the period. */
  billing_period: { start: string; end: string };
}

/**
 * The error envelope every refusal carries: a snake_case code, a sentence, and context that
 * depends on the code (`field` and `allowed` for invalid_request, `needed` and `available` for
 * insufficient_credits, `retry_after` for rate_limit_exceeded, the progress for
 * batch_not_completed).
 */
export interface ErrorEnvelope {
  error: string;
  message: string;
  [context: string]: unknown;
}

/** The event a finished batch job posts to its `callback_url`, signed (see verifyWebhook). */
export interface BatchEvent {
  event: 'batch.completed' | 'batch.failed';
  id: string;
  status: BatchState;
  total_emails: number;
  processed: number;
  valid: number;
  invalid: number;
  risky: number;
  /** Null for a failed job. */
  download_url: string | null;
  /** ISO 8601. */
  completed_at: string;
  /** Why a failed job failed. */
  reason?: string;
}

/** The rate limit an answer reported (X-RateLimit-Limit, -Remaining, -Reset). */
export interface RateLimit {
  /** Requests a minute the key's plan allows. */
  readonly limit: number;
  /** Requests left in the current window. */
  readonly remaining: number;
  /** When the window resets, in Unix seconds. */
  readonly reset: number;
}

/** The detailed shape cut down to `F` (plus `email`, which is always there). */
export type SelectedResult<F extends DetailedField> = Pick<DetailedResult, F | 'email'>;
