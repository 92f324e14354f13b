/**
 * Checks a batch job's completion event the Standard Webhooks way (standardwebhooks.com, the
 * spec's "Verifying webhooks"): the `webhook-signature` header holds one or more space-separated
 * `v1,<base64>` signatures, each an HMAC-SHA256 keyed by the base64 bytes after `whsec_`, of
 * `<webhook-id>.<webhook-timestamp>.<body>`; one must match, and the timestamp must be within
 * five minutes of now either way (a replayed delivery is refused). WebCrypto only: the same
 * code runs in Node, Deno, Bun, workers and browsers.
 */
import type { BatchEvent } from './types.js';

/** How far a delivery's timestamp may be from now, either way. */
export const WEBHOOK_TOLERANCE_S = 5 * 60;

export type WebhookVerificationErrorCode =
  | 'missing_header'
  | 'invalid_timestamp'
  | 'timestamp_out_of_range'
  | 'invalid_signature'
  | 'invalid_payload';

/** A delivery that is not a genuine, fresh event of ours: answer it with a 4xx and drop it. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  readonly code: WebhookVerificationErrorCode;

  constructor(code: WebhookVerificationErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** A Fetch Headers, or Node's `req.headers` (names lower-cased, a repeated header an array). */
export type WebhookHeaders =
  Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyWebhookOptions {
  /** Milliseconds since the epoch: Date.now by default. */
  readonly now?: () => number;
  readonly toleranceSeconds?: number;
}

const TIMESTAMP = /^\d{1,15}$/;
const SECRET_PREFIX = 'whsec_';

/**
 * The event of a delivery, once its signature and timestamp check out; else a
 * WebhookVerificationError. `body` must be the raw body as received (a string, or its bytes):
 * a parsed and re-serialized body no longer matches its signature. A `secret` that is not
 * `whsec_` + base64 is a TypeError (a configuration mistake, not a bad delivery).
 *
 * @example
 * ```ts
 * app.post('/mailverdict', express.text({ type: 'application/json' }), async (req, res) => {
 *   const event = await verifyWebhook(req.body, req.headers, process.env.MAILVERDICT_WEBHOOK_SECRET!);
 *   if (event.event === 'batch.completed') await fetchResults(event.id);
 *   res.sendStatus(204);
 * });
 * ```
 */
export async function verifyWebhook(
  body: string | Uint8Array | ArrayBuffer,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<BatchEvent> {
  const key = secretBytes(secret);
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookVerificationError(
      'missing_header',
      'webhook-id, webhook-timestamp and webhook-signature are all required',
    );
  }
  if (!TIMESTAMP.test(timestamp)) {
    throw new WebhookVerificationError(
      'invalid_timestamp',
      'webhook-timestamp is not Unix seconds',
    );
  }
  const nowS = Math.floor((options.now ?? Date.now)() / 1000);
  const tolerance = options.toleranceSeconds ?? WEBHOOK_TOLERANCE_S;
  if (Math.abs(nowS - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError(
      'timestamp_out_of_range',
      `webhook-timestamp is more than ${tolerance} s from now: a replay, or a clock far off`,
    );
  }
  const payload = typeof body === 'string' ? new TextEncoder().encode(body) : bytesOf(body);
  const expected = await hmacSha256(key, joined(`${id}.${timestamp}.`, payload));
  const matched = signatures
    .split(' ')
    .some(
      (candidate) =>
        candidate.startsWith('v1,') && sameBytes(base64Bytes(candidate.slice(3)), expected),
    );
  if (!matched) {
    throw new WebhookVerificationError('invalid_signature', 'no signature matches this secret');
  }
  return eventOf(payload);
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  const value = isFetchHeaders(headers)
    ? headers.get(name)
    : headers[Object.keys(headers).find((key) => key.toLowerCase() === name) ?? name];
  if (value === null || value === undefined) return undefined;
  // A repeated header: its values as one list, as Fetch's Headers joins them.
  return typeof value === 'string' ? value : value.join(' ');
}

function isFetchHeaders(headers: WebhookHeaders): headers is Headers {
  return typeof (headers as Partial<Headers>).get === 'function';
}

function secretBytes(secret: string): Uint8Array {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = base64Bytes(encoded);
  if (key === undefined || key.byteLength === 0) {
    throw new TypeError('the webhook secret must be whsec_ followed by base64 (from the server)');
  }
  return key;
}

function bytesOf(body: Uint8Array | ArrayBuffer): Uint8Array {
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

function joined(prefix: string, payload: Uint8Array): Uint8Array {
  const head = new TextEncoder().encode(prefix);
  const out = new Uint8Array(head.byteLength + payload.byteLength);
  out.set(head);
  out.set(payload, head.byteLength);
  return out;
}

async function hmacSha256(key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) {
    throw new TypeError('verifyWebhook needs WebCrypto (crypto.subtle): a secure context');
  }
  const hmac = await subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  return new Uint8Array(await subtle.sign('HMAC', hmac, data));
}

const BASE64 = /^[\d+/a-z]*={0,2}$/i;

/** Standard base64 (RFC 4648 4) to bytes, or undefined when it is not. */
function base64Bytes(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0 || !BASE64.test(text)) return undefined;
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** Equal bytes, compared in time that does not depend on where they differ. */
function sameBytes(a: Uint8Array | undefined, b: Uint8Array): boolean {
  if (a === undefined || a.byteLength !== b.byteLength) return false;
  let difference = 0;
  for (let i = 0; i < a.byteLength; i++) difference |= (a[i] as number) ^ (b[i] as number);
  return difference === 0;
}

const EVENTS: ReadonlySet<string> = new Set(['batch.completed', 'batch.failed']);

function eventOf(payload: Uint8Array): BatchEvent {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
  } catch {
    throw new WebhookVerificationError('invalid_payload', 'the signed body is not JSON');
  }
  const event = value as Partial<BatchEvent> | null;
  if (
    typeof event?.event !== 'string' ||
    !EVENTS.has(event.event) ||
    typeof event.id !== 'string'
  ) {
    throw new WebhookVerificationError('invalid_payload', 'the signed body is not a batch event');
  }
  return event as BatchEvent;
}
