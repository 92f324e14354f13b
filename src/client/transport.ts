import { delay } from '../delay.js';
import { ApiError, NetworkError } from './errors.js';
import { parseRetryAfter, retryDelayMs, type RetryPolicy } from './retry.js';
import { anySignal, Deadline } from './signals.js';
import type { ErrorEnvelope, RateLimit } from './types.js';

/** What a Transport is built with: the client's options, resolved. */
export interface TransportSettings {
  /** Ends in `/`, without query or fragment: paths are resolved against it. */
  readonly baseUrl: URL;
  readonly apiKey: string;
  readonly fetch: typeof globalThis.fetch;
  readonly timeoutMs: number;
  readonly maxResponseBytes: number;
  readonly signal: AbortSignal | undefined;
  readonly policy: RetryPolicy;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly now: () => number;
}

/** One call of the API, as the client's methods describe it. */
export interface ApiRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** Relative to baseUrl, without a leading `/` (`v1/verify`). */
  readonly path: string;
  readonly query?: Readonly<Record<string, string>>;
  readonly body?: unknown;
  readonly idempotencyKey?: string | undefined;
  readonly accept?: string;
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
}

/** An answer whose body is still to be read, under its attempt's deadline. */
export interface OpenAnswer {
  readonly response: Response;
  readonly deadline: Deadline;
}

/** The deadline of one attempt, by default (and the idle timeout of a download). */
export const DEFAULT_TIMEOUT_MS = 60_000;
/** JSON answers are small (a filter page is some 30 KB): anything past this is not the API. */
export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

const RATE_HEADER = /^\d{1,15}$/;

/** Wires the client's calls to fetch: retries, deadlines, bounded reads, the rate limit seen. */
export class Transport {
  /** The rate limit reported by the last answer that carried one. */
  rateLimit: RateLimit | undefined;
  readonly #settings: TransportSettings;

  constructor(settings: TransportSettings) {
    this.#settings = settings;
  }

  /** A JSON answer, read whole (up to maxResponseBytes), retried by the rules. */
  json<T>(request: ApiRequest): Promise<T> {
    return this.retrying(request, async () => {
      const answer = await this.#attempt(request);
      try {
        const bytes = await readAll(answer, this.#settings.maxResponseBytes, describe(request));
        return parseJsonObject(bytes, describe(request)) as T;
      } finally {
        answer.deadline.dispose();
      }
    });
  }

  /**
   * An answer whose body the caller streams: its deadline is then an idle timeout, restarted
   * at each chunk (see readChunks), and disposed of when the body is done.
   */
  open(request: ApiRequest): Promise<OpenAnswer> {
    return this.retrying(request, () => this.#attempt(request));
  }

  /**
   * Runs `attempt` until it succeeds or the rules say stop: only a request safe to repeat is
   * retried (GET, and POST with an idempotency key), and the waits end with the caller's abort.
   */
  async retrying<T>(request: ApiRequest, attempt: () => Promise<T>): Promise<T> {
    const repeatable =
      request.method === 'GET' ||
      (request.method === 'POST' && request.idempotencyKey !== undefined);
    const { policy, sleep } = this.#settings;
    for (let retry = 0; ; retry++) {
      try {
        return await attempt();
      } catch (error) {
        const wait = retryDelayMs(error, retry, repeatable, policy);
        if (wait === undefined) throw error;
        const stop = anySignal([this.#settings.signal, request.signal]);
        try {
          await sleep(wait, stop.signal);
        } finally {
          stop.dispose();
        }
      }
    }
  }

  async #attempt(request: ApiRequest): Promise<OpenAnswer> {
    const { baseUrl, apiKey, timeoutMs } = this.#settings;
    const url = new URL(request.path, baseUrl);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      url.searchParams.set(name, value);
    }
    const headers: Record<string, string> = {
      authorization: `Bearer ${apiKey}`,
      accept: request.accept ?? 'application/json',
    };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    if (request.idempotencyKey !== undefined) headers['idempotency-key'] = request.idempotencyKey;
    const deadline = new Deadline(request.timeoutMs ?? timeoutMs, [
      this.#settings.signal,
      request.signal,
    ]);
    const what = describe(request);
    try {
      let response: Response;
      try {
        response = await this.#settings.fetch(url, {
          method: request.method,
          headers,
          ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
          // The key goes to baseUrl's origin and nowhere else: a redirect is an error.
          redirect: 'manual',
          signal: deadline.signal,
        });
      } catch (error) {
        throw deadline.failure(error, what);
      }
      this.#noteRateLimit(response.headers);
      const redirect = redirectOf(response, baseUrl);
      if (redirect !== undefined) {
        await discard(response);
        throw new NetworkError('redirect', `${what}: ${redirect}`);
      }
      if (!response.ok) {
        throw await this.#refusal(response, { response, deadline }, what);
      }
      return { response, deadline };
    } catch (error) {
      deadline.dispose();
      throw error;
    }
  }

  /** The ApiError of a refusal: the envelope when the body is one, the status alone if not. */
  async #refusal(response: Response, answer: OpenAnswer, what: string): Promise<ApiError> {
    let body: unknown;
    try {
      body = parseJsonObject(await readAll(answer, this.#settings.maxResponseBytes, what), what);
    } catch {
      body = undefined;
    }
    const header = parseRetryAfter(response.headers.get('retry-after'), this.#settings.now());
    if (!isEnvelope(body)) {
      return new ApiError(
        response.status,
        'http_error',
        `${what}: HTTP ${response.status} without the API's error envelope`,
        { retryAfter: header },
      );
    }
    const { error, message, ...details } = body;
    const retryAfter =
      header ?? (typeof details.retry_after === 'number' ? details.retry_after : undefined);
    return new ApiError(response.status, error, message, { details, retryAfter });
  }

  #noteRateLimit(headers: Headers): void {
    const limit = headers.get('x-ratelimit-limit');
    const remaining = headers.get('x-ratelimit-remaining');
    const reset = headers.get('x-ratelimit-reset');
    if (limit === null || remaining === null || reset === null) return;
    if (![limit, remaining, reset].every((value) => RATE_HEADER.test(value))) return;
    this.rateLimit = { limit: Number(limit), remaining: Number(remaining), reset: Number(reset) };
  }
}

/** `GET v1/account`, for messages. */
function describe(request: ApiRequest): string {
  return `${request.method} /${request.path}`;
}

/**
 * Why an answer is a redirect, or undefined. With `redirect: 'manual'` a browser hands over an
 * opaque redirect and Node the 3xx itself; a fetch that followed it anyway shows another
 * origin in `response.url`.
 */
function redirectOf(response: Response, baseUrl: URL): string | undefined {
  if (response.type === 'opaqueredirect')
    return 'the server redirected; redirects are not followed';
  if (response.status >= 300 && response.status < 400) {
    const location = response.headers.get('location');
    return `the server redirected (${response.status}${location === null ? '' : ` to ${location}`}); redirects are not followed, so that the API key stays with baseUrl`;
  }
  if (response.url !== '' && new URL(response.url).origin !== baseUrl.origin) {
    return `the answer came from ${new URL(response.url).origin}, not from baseUrl's origin`;
  }
  return undefined;
}

/** Lets go of a body we will not read. */
async function discard(response: Response): Promise<void> {
  try {
    await response.body?.cancel();
  } catch {
    // Nothing to keep from a body we did not want.
  }
}

/**
 * A body's chunks, each read under the deadline restarted (an idle timeout, so that a large
 * download is not cut while bytes keep coming); a failed read is the deadline's failure. The
 * body is cancelled when the reader stops early.
 */
export async function* readChunks(answer: OpenAnswer, what: string): AsyncGenerator<Uint8Array> {
  const body = answer.response.body;
  if (body === null) return;
  const reader = body.getReader();
  let done = false;
  try {
    for (;;) {
      answer.deadline.restart();
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (error) {
        done = true;
        throw answer.deadline.failure(error, what);
      }
      if (next.done) {
        done = true;
        return;
      }
      yield next.value;
    }
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/** A whole body, refused past `limit` bytes before it is held (announced or counted). */
export async function readAll(
  answer: OpenAnswer,
  limit: number,
  what: string,
): Promise<Uint8Array> {
  const announced = Number(answer.response.headers.get('content-length') ?? '0');
  if (announced > limit) {
    await discard(answer.response);
    throw tooLarge(what, limit);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of readChunks(answer, what)) {
    size += chunk.byteLength;
    if (size > limit) throw tooLarge(what, limit);
    chunks.push(chunk);
  }
  return concat(chunks, size);
}

function tooLarge(what: string, limit: number): NetworkError {
  return new NetworkError(
    'invalid_response',
    `${what}: the answer is larger than ${limit} bytes (maxResponseBytes): not the API's`,
  );
}

/** The chunks as one array of `size` bytes (the one chunk itself when there is one). */
export function concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A JSON object from UTF-8 bytes, or an invalid_response NetworkError. */
export function parseJsonObject(bytes: Uint8Array, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(UTF8.decode(bytes));
  } catch (error) {
    throw new NetworkError('invalid_response', `${what}: the answer is not JSON`, error);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new NetworkError('invalid_response', `${what}: the answer is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

function isEnvelope(body: unknown): body is ErrorEnvelope {
  const candidate = body as Partial<ErrorEnvelope> | undefined;
  return typeof candidate?.error === 'string' && typeof candidate.message === 'string';
}

/** The default sleep: a timer that the signal ends early (rejecting with its reason). */
export const defaultSleep = (ms: number, signal?: AbortSignal): Promise<void> => delay(ms, signal);
