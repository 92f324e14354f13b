import { newIdempotencyKey } from './idempotency-key.js';
import { ndjsonObjects } from './ndjson.js';
import {
  batchBody,
  filterBody,
  filterQuery,
  verifyQuery,
  type CallOptions,
  type FilterQuery,
  type NewFilter,
  type ResultsFormat,
  type SubmitBatchOptions,
  type VerifyAnswer,
  type VerifyOptions,
} from './requests.js';
import {
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_AFTER_MS,
  retryDelayMs,
  type RetryPolicy,
} from './retry.js';
import { anySignal } from './signals.js';
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_TIMEOUT_MS,
  defaultSleep,
  readChunks,
  Transport,
  type ApiRequest,
} from './transport.js';
import type {
  Account,
  BatchCreated,
  BatchRecord,
  BatchStatus,
  Filter,
  FilterDeleted,
  FilterPage,
  RateLimit,
} from './types.js';

export interface ClientOptions {
  /** Where the API is: `https://api.example.com`, or with a path (`https://example.net/mv`). */
  readonly baseUrl: string | URL;
  /** A private key (`mv_sk_...`), or a public one (`mv_pk_...`) for verify from a page. */
  readonly apiKey: string;
  /** The fetch to call: the runtime's by default. */
  readonly fetch?: typeof globalThis.fetch;
  /** Retries of a call that failed in a way worth retrying (default 3; 0 turns them off). */
  readonly maxRetries?: number;
  /**
   * Deadline of one attempt, and the longest a streamed download may go without a byte.
   * Default 60 s; a verify that runs the smtp method gets 200 s (the server allows it 180).
   */
  readonly timeoutMs?: number;
  /** Stops every call of this client, now and later. */
  readonly signal?: AbortSignal;
  /** A JSON answer larger than this is refused rather than held (default 4 MiB). */
  readonly maxResponseBytes?: number;
  /** A Retry-After longer than this is not waited for: the 429 is thrown (default 60 s). */
  readonly maxRetryAfterMs?: number;
  /** How the client waits between tries and polls (tests give their own). */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A number in [0, 1) for the backoff's jitter. */
  readonly random?: () => number;
  /** Milliseconds since the epoch. */
  readonly now?: () => number;
}

/** How waitForBatch polls. */
export interface WaitOptions {
  /** The longest wait between two polls (default 2,000 ms); the first ones come sooner. */
  readonly pollMs?: number;
  readonly signal?: AbortSignal;
  /** Called with each status polled, the last one (completed or failed) included. */
  readonly onProgress?: (status: BatchStatus) => void;
}

export interface ResultsOptions extends CallOptions {
  /** A record longer than this is refused rather than held (default 1 MiB). */
  readonly maxRecordBytes?: number;
}

/** A results download as the server sends it, streamed. */
export interface ResultsDownload {
  readonly contentType: string;
  readonly body: ReadableStream<Uint8Array>;
}

export interface Client {
  /** The rate limit the last answer reported, or undefined before any did. */
  readonly rateLimit: RateLimit | undefined;
  /**
   * Verifies one address (`GET /v1/verify`); the answer's shape follows the options: compact
   * by default, `detailed: true`, `fields: [...]`, or shape B with `smtp` or `siteSource`.
   * A GET: retried by the rules; give an `idempotencyKey` so that a retry after a lost answer
   * is never charged twice.
   */
  verify<const O extends VerifyOptions = Record<never, never>>(
    email: string,
    options?: O,
  ): Promise<VerifyAnswer<O>>;
  /** Submits 1 to 50,000 addresses as a job (`POST /v1/verify`); safe to retry. */
  submitBatch(emails: readonly string[], options?: SubmitBatchOptions): Promise<BatchCreated>;
  /** A job's progress (`GET /v1/verify/{id}`). */
  batch(id: string, options?: CallOptions): Promise<BatchStatus>;
  /**
   * Queues a finished job's webhook again for a new round of attempts (`POST
   * /v1/verify/{id}/webhook`), once its receiver is fixed; resolves to the job's status, its
   * `webhook` pending. A POST without an idempotency key: not retried.
   */
  redeliverWebhook(id: string, options?: CallOptions): Promise<BatchStatus>;
  /**
   * Polls a job until it is completed or failed and resolves to that status (check
   * `status.status`). Polls come faster at first, then every `pollMs`; when the rate limit
   * has no request left, the next poll waits for its reset.
   */
  waitForBatch(id: string, options?: WaitOptions): Promise<BatchStatus>;
  /**
   * A completed job's records in input order, parsed as they stream in (NDJSON on the wire),
   * never held whole. A connection that breaks mid-way is reopened (up to maxRetries) and
   * the records already yielded are skipped, so each comes once.
   */
  batchResults(id: string, options?: ResultsOptions): AsyncGenerator<BatchRecord, void, undefined>;
  /** A completed job's results as the server formats them (`json`, `csv`, `ndjson`), streamed: to save a file. */
  downloadResults(
    id: string,
    options?: CallOptions & { readonly format?: ResultsFormat },
  ): Promise<ResultsDownload>;
  readonly filters: {
    create(filter: NewFilter, options?: CallOptions): Promise<Filter>;
    list(query?: FilterQuery, options?: CallOptions): Promise<FilterPage>;
    delete(id: string, options?: CallOptions): Promise<FilterDeleted>;
  };
  /** Plan, credits, rate limit and billing period (`GET /v1/account`). */
  account(options?: CallOptions): Promise<Account>;
}

/** The deadline of a verify that probes mailboxes: the server gives it 180 s. */
export const SMTP_VERIFY_TIMEOUT_MS = 200_000;
/** waitForBatch's longest wait between two polls, by default. */
export const DEFAULT_POLL_MS = 2_000;
const FIRST_POLL_MS = 250;
const DEFAULT_MAX_RECORD_BYTES = 1024 * 1024;
/** Printable ASCII: a key with a space or a line break would break the header. */
const KEY_TEXT = /^[\x21-\x7e]+$/;

/**
 * A client of a mailverdict /v1 API, for any runtime with fetch (Node 20+, browsers, Deno,
 * Bun, workers). Every call retries by the API's rules, keeps the API key with baseUrl's
 * origin (redirects are refused), and bounds what it reads.
 *
 * @example
 * ```ts
 * const client = createClient({ baseUrl: 'https://api.example.com', apiKey: process.env.MAILVERDICT_API_KEY! });
 * const { state, reason } = await client.verify('ann@example.org');
 * const job = await client.submitBatch(emails);
 * await client.waitForBatch(job.id, { onProgress: (s) => console.log(`${s.percent_complete}%`) });
 * for await (const record of client.batchResults(job.id)) console.log(record.email, record.state);
 * ```
 */
export function createClient(options: ClientOptions): Client {
  // Plain JavaScript callers may pass anything: null failed as a read of null's baseUrl.
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(
      'createClient expects its options as an object ({ baseUrl, apiKey }), got ' +
        (options === null ? 'null' : typeof options),
    );
  }
  const baseUrl = apiBase(options.baseUrl);
  if (typeof options.apiKey !== 'string' || !KEY_TEXT.test(options.apiKey)) {
    throw new TypeError('apiKey must be the API key: printable characters, no spaces');
  }
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new TypeError('maxRetries must be a whole number, 0 or more');
  }
  for (const name of ['timeoutMs', 'maxResponseBytes', 'maxRetryAfterMs'] as const) {
    const value = options[name];
    if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
      throw new TypeError(`${name} must be a positive number`);
    }
  }
  const policy: RetryPolicy = {
    maxRetries,
    maxRetryAfterMs: options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS,
    random: options.random ?? Math.random,
  };
  const sleep = options.sleep ?? defaultSleep;
  const now = options.now ?? Date.now;
  const runtimeFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const transport = new Transport({
    baseUrl,
    apiKey: options.apiKey,
    fetch: runtimeFetch,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    signal: options.signal,
    policy,
    sleep,
    now,
  });
  const call = (call: CallOptions) => ({ signal: call.signal, timeoutMs: call.timeoutMs });

  /** How long the next poll must wait for the rate limit: until its reset when none is left. */
  const rateLimitWaitMs = (): number => {
    const limit = transport.rateLimit;
    if (limit === undefined || limit.remaining > 0) return 0;
    return Math.min(Math.max(0, limit.reset * 1000 - now()), policy.maxRetryAfterMs);
  };

  const client: Client = {
    get rateLimit() {
      return transport.rateLimit;
    },

    async verify<const O extends VerifyOptions>(email: string, verifyOptions?: O) {
      const given: VerifyOptions = verifyOptions ?? {};
      if (typeof email !== 'string') throw new TypeError('email must be a string');
      const probes =
        given.method === 'smtp' ||
        (given.method === undefined && isShapeB(given) && given.smtp !== false);
      const timeoutMs =
        given.timeoutMs ??
        (probes && options.timeoutMs === undefined ? SMTP_VERIFY_TIMEOUT_MS : undefined);
      return transport.json<VerifyAnswer<O>>({
        method: 'GET',
        path: 'v1/verify',
        query: verifyQuery(email, given),
        idempotencyKey: given.idempotencyKey,
        signal: given.signal,
        timeoutMs,
      });
    },

    async submitBatch(emails, submit = {}) {
      if (!Array.isArray(emails)) throw new TypeError('emails must be an array of strings');
      return transport.json<BatchCreated>({
        method: 'POST',
        path: 'v1/verify',
        body: batchBody(emails, submit),
        idempotencyKey: submit.idempotencyKey ?? newIdempotencyKey(),
        ...call(submit),
      });
    },

    async batch(id, batchOptions = {}) {
      return transport.json<BatchStatus>({
        method: 'GET',
        path: `v1/verify/${pathId(id)}`,
        ...call(batchOptions),
      });
    },

    async redeliverWebhook(id, redeliverOptions = {}) {
      return transport.json<BatchStatus>({
        method: 'POST',
        path: `v1/verify/${pathId(id)}/webhook`,
        ...call(redeliverOptions),
      });
    },

    async waitForBatch(id, wait = {}) {
      const pollMs = wait.pollMs ?? DEFAULT_POLL_MS;
      let interval = Math.min(FIRST_POLL_MS, pollMs);
      for (;;) {
        const status = await client.batch(id, optionalSignal(wait.signal));
        wait.onProgress?.(status);
        if (status.status !== 'processing') return status;
        const stop = anySignal([options.signal, wait.signal]);
        try {
          await sleep(Math.max(interval, rateLimitWaitMs()), stop.signal);
        } finally {
          stop.dispose();
        }
        interval = Math.min(pollMs, interval * 2);
      }
    },

    async *batchResults(id, results = {}) {
      const request: ApiRequest = {
        method: 'GET',
        path: `v1/verify/${pathId(id)}/results`,
        query: { format: 'ndjson' },
        accept: 'application/x-ndjson',
        ...call(results),
      };
      const what = `GET /${request.path}`;
      const maxRecordBytes = results.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
      let delivered = 0;
      for (let retry = 0; ; retry++) {
        const answer = await transport.open(request);
        let seen = 0;
        try {
          for await (const record of ndjsonObjects(
            readChunks(answer, what),
            maxRecordBytes,
            what,
          )) {
            // After a reconnection, the records already handed out come again: skip them.
            if (seen++ < delivered) continue;
            delivered++;
            yield record as unknown as BatchRecord;
          }
          return;
        } catch (error) {
          const wait = retryDelayMs(error, retry, true, policy);
          if (wait === undefined) throw error;
          const stop = anySignal([options.signal, results.signal]);
          try {
            await sleep(wait, stop.signal);
          } finally {
            stop.dispose();
          }
        } finally {
          answer.deadline.dispose();
        }
      }
    },

    async downloadResults(id, download = {}) {
      const format = download.format ?? 'json';
      const request: ApiRequest = {
        method: 'GET',
        path: `v1/verify/${pathId(id)}/results`,
        query: { format },
        accept: '*/*',
        ...call(download),
      };
      const answer = await transport.open(request);
      const chunks = readChunks(answer, `GET /${request.path}`);
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            const next = await chunks.next();
            if (next.done === true) {
              answer.deadline.dispose();
              controller.close();
            } else {
              controller.enqueue(next.value);
            }
          } catch (error) {
            answer.deadline.dispose();
            controller.error(error);
          }
        },
        async cancel() {
          await chunks.return(undefined);
          answer.deadline.dispose();
        },
      });
      return { contentType: answer.response.headers.get('content-type') ?? '', body };
    },

    filters: {
      async create(filter, filterOptions = {}) {
        return transport.json<Filter>({
          method: 'POST',
          path: 'v1/filters',
          body: filterBody(filter),
          ...call(filterOptions),
        });
      },
      async list(query = {}, listOptions = {}) {
        return transport.json<FilterPage>({
          method: 'GET',
          path: 'v1/filters',
          query: filterQuery(query),
          ...call(listOptions),
        });
      },
      async delete(id, deleteOptions = {}) {
        return transport.json<FilterDeleted>({
          method: 'DELETE',
          path: `v1/filters/${pathId(id)}`,
          ...call(deleteOptions),
        });
      },
    },

    async account(accountOptions = {}) {
      return transport.json<Account>({
        method: 'GET',
        path: 'v1/account',
        ...call(accountOptions),
      });
    },
  };
  return client;
}

function isShapeB(options: VerifyOptions): boolean {
  return options.smtp !== undefined || options.siteSource !== undefined;
}

function optionalSignal(signal: AbortSignal | undefined): CallOptions {
  return signal === undefined ? {} : { signal };
}

/** An id as one path segment: never a way to reach another route. */
function pathId(id: string): string {
  if (typeof id !== 'string' || id === '') throw new TypeError('id must be a non-empty string');
  return encodeURIComponent(id);
}

/**
 * baseUrl as paths resolve against it: http or https, no query or fragment, and a path that
 * ends in `/` so that `https://example.net/mv` keeps its `mv`.
 */
function apiBase(base: string | URL): URL {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new TypeError(`baseUrl must be an absolute URL, got ${JSON.stringify(String(base))}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TypeError(`baseUrl must be http or https, got ${url.protocol}`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new TypeError('baseUrl must not carry credentials: the API key is the credential');
  }
  url.search = '';
  url.hash = '';
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}
