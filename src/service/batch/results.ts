import { DETAILED_FIELDS } from '../../format/shapes.js';
import type { JobResultRow, WebhookMessage, WebhookStatus } from '../../ports/batch-store.js';
import type { JobRecord, Store } from '../../ports/store.js';
import { nextSlice, SLICE_MS, sliceSpent } from '../../slices.js';
import type { ResultsFormat } from '../request-fields.js';
import { invalidRequest, ServiceError } from '../service-error.js';
import { requireText } from '../validate.js';
import type { BatchEvent } from './webhooks.js';

export type { ResultsFormat };
export const RESULTS_CONTENT_TYPES: Readonly<Record<ResultsFormat, string>> = {
  json: 'application/json',
  csv: 'text/csv; charset=utf-8',
  ndjson: 'application/x-ndjson',
};
/**
 * Records read from the store per page, and so per chunk: about 400 bytes each, so a chunk
 * is some 200 KB and a download holds one page at a time whatever the job's size.
 */
export const RESULTS_PAGE_SIZE = 500;

/** `GET /v1/verify/{id}`, snake_case as on the wire. */
export interface BatchStatus {
  readonly id: string;
  readonly status: JobRecord['status'];
  readonly total_emails: number;
  readonly processed: number;
  readonly percent_complete: number;
  readonly valid: number;
  readonly invalid: number;
  readonly risky: number;
  /** Once completed: absolute on the job's base URL, a path when it has none. */
  readonly download_url?: string;
  /** Why a failed job failed. */
  readonly reason?: string;
  /** With a callback: where the delivery of its webhook stands. */
  readonly webhook?: WebhookState;
}

/** The delivery of a job's webhook, as its status shows it. */
export interface WebhookState {
  /** pending until delivered; failed once the attempts ran out (a redelivery starts again). */
  readonly status: WebhookStatus;
  /** Attempts since it was queued, or queued again. */
  readonly attempts: number;
  /** The HTTP status the last attempt was answered with; null without one. */
  readonly last_status: number | null;
  /** Why the last attempt was not a delivery (`HTTP 500`, `timeout: ...`); null if it was. */
  readonly last_error: string | null;
  /** When a pending webhook is tried next (ISO 8601); null once delivered or failed. */
  readonly next_attempt_at: string | null;
}

/** The download: an async iterable of text chunks, with what a host needs to serve it. */
export interface BatchResults extends AsyncIterable<string> {
  readonly format: ResultsFormat;
  readonly contentType: string;
}

/**
 * A base URL as download URLs are resolved against it: its path ends in `/`, so that
 * `https://example.net/mailverdict` keeps its last segment (URL resolution would replace it),
 * and it carries no query or fragment.
 */
export function baseUrlOf(base: string): string {
  // A bad baseUrl is the host's configuration error: it throws when the service is created.
  const url = new URL(base);
  url.search = '';
  url.hash = '';
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url.href;
}

/** An absolute http(s) URL given as an argument, as baseUrlOf makes it, else invalid_request. */
export function requireBaseUrl(value: unknown, field: string): string {
  const text = requireText(value, field, 2048);
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw invalidRequest(field, `${field} must be an absolute http(s) URL`);
  }
  return baseUrlOf(url.href);
}

/** Where a caller of the service says a job's download_url should be built. */
export interface BaseUrlChoice {
  /** Its configured base, before the service's (the HTTP handler's `baseUrl`). */
  readonly baseUrl?: string | undefined;
  /** A base for when neither it nor the service has one (mailverdict/node's address). */
  readonly defaultBaseUrl?: string | undefined;
}

/**
 * The base URL a job is given at submission, and the one a job stored without its own is
 * read on; one rule for both: the caller's configured `baseUrl`, else the service's, else the
 * caller's `defaultBaseUrl`, else none (download_url is then a path). Each given value is
 * checked, used or not, so that a bad one is refused whatever the service holds.
 */
export function chooseBaseUrl(
  choice: Readonly<Record<string, unknown>>,
  serviceBaseUrl: string | null,
): string | null {
  const given =
    choice.baseUrl === undefined ? undefined : requireBaseUrl(choice.baseUrl, 'base_url');
  const fallback =
    choice.defaultBaseUrl === undefined
      ? undefined
      : requireBaseUrl(choice.defaultBaseUrl, 'default_base_url');
  return given ?? serviceBaseUrl ?? fallback ?? null;
}

/**
 * Where a finished job's results are fetched, the one place it is computed (its status and
 * its webhook both ask here): on the base URL stored with the job at submission, or for a job
 * stored before bases were kept, on `fallback`, the reading process's own. No base at all (a
 * host that configured none) gives the path alone, which resolves against the URL the client
 * called; never a base taken from a request's Host or target.
 */
export function downloadUrl(job: JobRecord, fallback: string | null): string {
  const base = job.baseUrl === undefined ? fallback : job.baseUrl;
  const path = `v1/verify/${encodeURIComponent(job.id)}/results`;
  return base === null ? `/${path}` : new URL(path, base).href;
}

/** Whole percents, rounded down: 100 only when every address has its result. */
function percent(job: JobRecord): number {
  return job.totalEmails === 0 ? 100 : Math.floor((job.processed * 100) / job.totalEmails);
}

/**
 * A job's webhook as its status shows it: the outbox message, or before the job finished
 * (no message yet), pending with nothing tried.
 */
export function webhookStateOf(message: WebhookMessage | undefined): WebhookState {
  if (message === undefined) {
    return {
      status: 'pending',
      attempts: 0,
      last_status: null,
      last_error: null,
      next_attempt_at: null,
    };
  }
  return {
    status: message.status,
    attempts: message.attempts,
    last_status: message.lastStatus,
    last_error: message.lastError,
    next_attempt_at:
      message.status === 'pending' ? new Date(message.nextAttemptAt).toISOString() : null,
  };
}

/**
 * `GET /v1/verify/{id}`; `fallback` as downloadUrl takes it; `webhook` is the job's outbox
 * message, for a job with a callback.
 */
export function statusOf(
  job: JobRecord,
  fallback: string | null,
  webhook?: WebhookMessage,
): BatchStatus {
  return {
    id: job.id,
    status: job.status,
    total_emails: job.totalEmails,
    processed: job.processed,
    percent_complete: percent(job),
    valid: job.valid,
    invalid: job.invalid,
    risky: job.risky,
    ...(job.status === 'completed' ? { download_url: downloadUrl(job, fallback) } : {}),
    ...(job.failureReason === null ? {} : { reason: job.failureReason }),
    ...(job.callbackUrl === null ? {} : { webhook: webhookStateOf(webhook) }),
  };
}

/** The webhook's event; `fallback` as downloadUrl takes it. */
export function eventOf(job: JobRecord, fallback: string | null): BatchEvent {
  return {
    event: job.status === 'completed' ? 'batch.completed' : 'batch.failed',
    id: job.id,
    status: job.status,
    total_emails: job.totalEmails,
    processed: job.processed,
    valid: job.valid,
    invalid: job.invalid,
    risky: job.risky,
    download_url: job.status === 'completed' ? downloadUrl(job, fallback) : null,
    completed_at: new Date(job.completedAt ?? 0).toISOString(),
    ...(job.failureReason === null ? {} : { reason: job.failureReason }),
  };
}

/** 409 `batch_not_completed` with the progress, for a download asked too early. */
export function notCompleted(job: JobRecord): ServiceError {
  const { id, status, total_emails, processed, percent_complete } = statusOf(job, null);
  return new ServiceError(
    'batch_not_completed',
    status === 'failed'
      ? `Batch ${id} failed; it has no results to download.`
      : `Batch ${id} is still processing: ${processed} of ${total_emails} done.`,
    { id, status, total_emails, processed, percent_complete },
  );
}

/**
 * Streams a completed job's results, a page of the store at a time, in input order. A page is
 * read and serialized within the event loop's turn; once `sliceMs` is spent (a SQLite store
 * reads synchronously, and a client reading fast takes page after page without the loop
 * turning), the next page waits for a later turn (src/slices.ts).
 */
export function streamResults(
  store: Store,
  job: JobRecord,
  format: ResultsFormat,
  {
    pageSize = RESULTS_PAGE_SIZE,
    sliceMs = SLICE_MS,
  }: { pageSize?: number; sliceMs?: number } = {},
): BatchResults {
  async function* chunks(): AsyncGenerator<string> {
    const write = WRITERS[format];
    yield write.head(job);
    let after = -1;
    let first = true;
    for (;;) {
      if (sliceSpent(sliceMs)) await nextSlice();
      const rows = await store.jobResults(job.id, after, pageSize);
      if (rows.length === 0) break;
      let chunk = '';
      for (const row of rows) {
        chunk += write.record(downloaded(row), row.duplicate, first);
        first = false;
      }
      after = (rows[rows.length - 1] as { position: number }).position;
      yield chunk;
    }
    yield write.tail();
  }
  return {
    format,
    contentType: RESULTS_CONTENT_TYPES[format],
    [Symbol.asyncIterator]: chunks,
  };
}

/**
 * A stored record as downloaded: the address as submitted first (`A@EXAMPLE.ORG` where the
 * record's email reads `A@example.org`), and `duplicate: true` last on a repeat. The input is
 * the position's own: a repeat's record is a copy of its first occurrence's.
 */
function downloaded(row: JobResultRow): string {
  const fields = row.record.slice(1, -1);
  const duplicate = row.duplicate ? ',"duplicate":true' : '';
  return `{"input":${JSON.stringify(row.input)},${fields}${duplicate}}`;
}

interface Writer {
  head(job: JobRecord): string;
  record(json: string, duplicate: boolean, first: boolean): string;
  tail(): string;
}

/** The CSV download's columns: the address as submitted, the detailed shape, `duplicate`. */
export const RESULTS_CSV_COLUMNS = ['input', ...DETAILED_FIELDS, 'duplicate'] as const;

const WRITERS: Readonly<Record<ResultsFormat, Writer>> = {
  json: {
    head: (job) => `{"id":${JSON.stringify(job.id)},"total_emails":${job.totalEmails},"results":[`,
    record: (json, _duplicate, first) => (first ? `\n${json}` : `,\n${json}`),
    tail: () => '\n]}\n',
  },
  ndjson: {
    head: () => '',
    record: (json) => `${json}\n`,
    tail: () => '',
  },
  csv: {
    head: () => `${RESULTS_CSV_COLUMNS.join(',')}\r\n`,
    record(json, duplicate) {
      const fields = JSON.parse(json) as Record<string, unknown>;
      return `${RESULTS_CSV_COLUMNS.map((column) =>
        csvCell(column === 'duplicate' ? duplicate : fields[column]),
      ).join(',')}\r\n`;
    },
    tail: () => '',
  },
};

/**
 * One CSV cell (RFC 4180): null is empty; a text that a spreadsheet would run as a formula
 * (=, +, -, @, tab, CR first) is prefixed with an apostrophe (OWASP CSV injection), and
 * anything with a comma, quote or line break is quoted.
 */
function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'string') return String(value);
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
