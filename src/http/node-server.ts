import {
  createServer,
  STATUS_CODES,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import type {
  PrometheusMetrics,
  PrometheusMetricsOptions,
} from '../adapters/prometheus/metrics.js';
import type { MetricsEndpoint } from '../ports/observer.js';
import { baseUrlOf } from '../service/batch/results.js';
import type { Service } from '../service/service.js';
import { withRemoteAddress } from './client-ip.js';
import type { HandlerRequest } from './exchange.js';
import {
  createHandler,
  replyHandlerOf,
  type FetchHandler,
  type HandlerOptions,
  type ReplyHandler,
} from './handler.js';
import { discardInSlices } from './discard.js';
import { MAX_BODY_BYTES } from './request-body.js';
import { clientClosedRequest, errorReply, HttpError, type Reply } from './responses.js';
import { rawPathname } from './routes.js';
import {
  HEADERS_TIMEOUT_MS,
  KEEP_ALIVE_TIMEOUT_MS,
  MAX_HEADER_BYTES,
  MAX_HEADERS_COUNT,
  REQUEST_TIMEOUT_MS,
  WRITE_TIMEOUT_MS,
} from './server-limits.js';

/** How long `close()` waits for requests in flight before cutting their connections. */
export const SHUTDOWN_TIMEOUT_MS = 30_000;
/** Bytes of request body buffered ahead of the handler's reading: back-pressure beyond. */
const BODY_HIGH_WATER_MARK = 64 * 1024;
/**
 * Bytes of a streamed answer handed to the socket at a time: node's own high-water mark, so
 * that each write waits for the client to take about this much, and the write timeout
 * measures the time without such progress (a 200 KB page written whole had a client read
 * 200 KB within the timeout, a rate, rather than anything at all).
 */
const WRITE_PIECE_BYTES = 16 * 1024;
/**
 * How long a connection refused at the HTTP level (malformed, headers too large, too slow)
 * stays open after its answer, for the client to read it before the connection is cut.
 */
const REFUSAL_LINGER_MS = 2_000;

const NO_BODY = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE']);

/** Answers that tell a client waiting with `Expect: 100-continue` to send its body, not yet sent. */
const awaitingContinue = new WeakSet<ServerResponse>();
/** Sockets whose request timed out (serve's clientError): their body's reader is told 408. */
const timedOut = new WeakSet<Socket>();
/** Sockets whose request was answered and whose body is being read to be thrown away. */
const discarding = new WeakSet<Socket>();

/** What createNodeListener refuses or bounds before and after the handler answers. */
export interface NodeListenerOptions {
  /**
   * Most header fields a request may carry; more is a 431, never a silent drop of the rest
   * (X-Forwarded-For or Authorization among them). The node server's own `maxHeadersCount`
   * must be above it (node keeps 1,000 by default, then drops the rest); serve() sets it.
   * Default 100.
   */
  readonly maxHeadersCount?: number;
  /**
   * The handler's largest body (HandlerOptions.maxBodyBytes, default 16 MiB). A request
   * answered before its body was read (a refusal, a 413) has the rest read and thrown away, up
   * to twice this, so that a client still sending receives its answer (RFC 9112 9.6: closing
   * on unread data resets the connection, and the reset can erase the answer before the
   * client reads it); a body declared larger, or running longer, closes the connection.
   */
  readonly maxBodyBytes?: number;
  /**
   * How long a client may take nothing of an answer being written, in milliseconds, before
   * the connection is cut: a download's client that stops reading holds the connection and
   * its socket buffers that long at most, and the download stops being read from the store
   * meanwhile (back-pressure). Default WRITE_TIMEOUT_MS (30 s).
   */
  readonly writeTimeoutMs?: number;
}

/**
 * A node:http request listener for a fetch handler. A handler from createHandler is called at
 * its Reply level with a light stand-in for the Request (url, method, headers, a body stream
 * read as the handler asks, a signal aborted when the client goes away, the socket's address
 * for `clientIp`) and its Reply written straight to the socket; any other fetch handler gets
 * a real Request and its Response is written back with back-pressure. A request with more
 * header fields than `maxHeadersCount` (431), or without a Host or with two (400, RFC 9112
 * 3.2), is refused before the handler sees it.
 */
export function createNodeListener(
  handler: FetchHandler,
  options: NodeListenerOptions = {},
): RequestListener {
  const replies = replyHandlerOf(handler);
  const settings: ListenerSettings = {
    maxHeadersCount: options.maxHeadersCount ?? MAX_HEADERS_COUNT,
    discardLimit: 2 * (options.maxBodyBytes ?? MAX_BODY_BYTES),
    writeTimeoutMs: writeTimeoutOf(options.writeTimeoutMs),
  };
  return (incoming, outgoing) => {
    void answer(handler, replies, incoming, outgoing, settings).catch((error: unknown) => {
      // Only a fetch handler of someone else's can throw (ours answers every error): a 500
      // while the status line is still ours to write, else the connection is cut.
      if (outgoing.headersSent) {
        outgoing.destroy(error as Error);
        return;
      }
      outgoing.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
      outgoing.end(
        JSON.stringify({ error: 'internal_error', message: 'The request handler failed.' }),
      );
    });
  };
}

/** The write timeout, checked: a timer longer than 2^31 - 1 ms fires at once in Node. */
function writeTimeoutOf(ms = WRITE_TIMEOUT_MS): number {
  if (!(ms > 0 && ms <= 2 ** 31 - 1)) {
    throw new RangeError(`writeTimeoutMs must be 1 to 2^31 - 1 ms, got ${ms}`);
  }
  return ms;
}

interface ListenerSettings {
  readonly maxHeadersCount: number;
  /** Bytes of an unread body read and thrown away after an early answer, at most. */
  readonly discardLimit: number;
  readonly writeTimeoutMs: number;
}

async function answer(
  handler: FetchHandler,
  replies: ReplyHandler | undefined,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  settings: ListenerSettings,
): Promise<void> {
  let request: NodeRequest | undefined;
  let reply: Reply;
  try {
    refuseMalformed(incoming, settings.maxHeadersCount);
    request = new NodeRequest(incoming, outgoing);
    reply = replies !== undefined ? await replies(request) : await fetchReply(handler, request);
  } catch (error) {
    if (request !== undefined) throw error;
    // Refused here, before any handler: nothing of ours failed, so there is nothing to report.
    reply = errorReply(error instanceof HttpError ? error : malformedRequest(), () => undefined);
  }
  const { status, body } = reply;
  let { headers } = reply;
  if (!(request?.bodyFinished() ?? bodyReceived(incoming))) {
    headers = afterUnreadBody(incoming, outgoing, headers, settings.discardLimit);
  }
  if (body === null || typeof body === 'string') {
    // A length, so that node sends no chunked encoding: one end() with the headers is then one
    // write, one packet. Without it the closing chunk went out as a second buffer and every
    // answer took a writev (a third of the server's time under autocannon, bench/).
    // A HEAD's answer has no body but the length its GET would have had, if known; a 204
    // carries no Content-Length at all (RFC 9110 8.6).
    if (body !== null || (incoming.method !== 'HEAD' && status !== 204 && status !== 304)) {
      const declared = headers['content-length'];
      const length =
        body !== null
          ? String(Buffer.byteLength(body))
          : typeof declared === 'string'
            ? declared
            : '0';
      headers = { ...headers, 'content-length': length };
    }
    outgoing.writeHead(status, headers);
    outgoing.end(body ?? undefined);
    // What the socket did not take at once waits for a client that may not be reading.
    if (outgoing.writableLength > 0) void taken(outgoing, 'finish', settings.writeTimeoutMs);
    return;
  }
  outgoing.writeHead(status, headers);
  await pipeBody(body, outgoing, settings.writeTimeoutMs);
}

/** The Reply of a fetch handler that is not ours, from its Response. */
async function fetchReply(handler: FetchHandler, request: NodeRequest): Promise<Reply> {
  const response = await handler(request.toRequest());
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { status: response.status, headers, body: response.body };
}

/**
 * Refuses what no handler should see: more header fields than allowed (431: node keeps only
 * its own maximum of them and drops the rest silently, so we refuse from one above ours), and
 * an HTTP/1.1 request without Host, or any request with two (RFC 9112 3.2: 400). A Host that is
 * no host is refused when its URL is built (NodeRequest).
 */
function refuseMalformed(incoming: IncomingMessage, maxHeadersCount: number): void {
  const raw = incoming.rawHeaders;
  if (raw.length / 2 > maxHeadersCount) {
    throw new HttpError(
      431,
      'request_header_fields_too_large',
      `The request has more than ${maxHeadersCount} header fields.`,
      { field: 'headers', limit: maxHeadersCount },
    );
  }
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).toLowerCase() === 'host') hosts++;
  }
  if (hosts > 1 || (hosts === 0 && incoming.httpVersion === '1.1')) {
    throw new HttpError(
      400,
      'invalid_request',
      hosts === 0 ? 'The request has no Host header.' : 'The request has more than one Host.',
      { field: 'host' },
    );
  }
}

function malformedRequest(): HttpError {
  return new HttpError(400, 'invalid_request', 'The request line or a header is malformed.', {
    field: 'headers',
  });
}

/** Whether the request's body, if it has one, has been received whole. */
function bodyReceived(incoming: IncomingMessage): boolean {
  return !hasBody(incoming) || incoming.complete;
}

/**
 * The headers of an answer given before the request's body was read to its end (a refusal,
 * a 413), and what becomes of the rest of that body. RFC 9110 10.1.1: such an answer says
 * whether the connection closes or the rest is read and discarded. A client waiting for
 * `100 Continue` sent no body: node closes the connection itself. A body declared larger than
 * `discardLimit` closes it too. Any other is read and thrown away, up to `discardLimit` bytes
 * and within the request timeout, while and after the answer goes out; the connection then
 * serves its next request, or is cut when the body runs past either bound.
 */
function afterUnreadBody(
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  headers: Record<string, string>,
  discardLimit: number,
): Record<string, string> {
  if (awaitingContinue.has(outgoing)) return headers;
  const declared = Number(incoming.headers['content-length'] ?? 0);
  if (declared > discardLimit) return { ...headers, connection: 'close' };
  discardRest(incoming, discardLimit);
  return headers;
}

/**
 * Reads what is left of a request's body and throws it away, a slice a turn; past `limit`
 * bytes, hangs up.
 * Started before the answer is written: node would otherwise drain the body itself once the
 * answer is out, unbounded, and out of our sight.
 */
function discardRest(incoming: IncomingMessage, limit: number): void {
  if (incoming.readableEnded || incoming.destroyed) return;
  const { socket } = incoming;
  // Received whole, it is only drained from memory: the socket carries nothing more of it.
  if (!incoming.complete) discarding.add(socket);
  let discarded = 0;
  incoming.removeAllListeners('data');
  incoming.once('end', () => discarding.delete(socket));
  discardInSlices(incoming, (bytes) => {
    discarded += bytes;
    if (discarded > limit) socket.destroy();
  });
}

/**
 * Writes a streamed body with back-pressure: the next chunk is read only once the client took
 * the last (so a client that reads slowly slows the reading, and one that reads nothing stops
 * it), and a client that takes nothing for `writeTimeoutMs` is cut off.
 */
async function pipeBody(
  body: ReadableStream<Uint8Array>,
  outgoing: ServerResponse,
  writeTimeoutMs: number,
): Promise<void> {
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (let at = 0; at < value.byteLength; at += WRITE_PIECE_BYTES) {
        const piece = value.subarray(at, at + WRITE_PIECE_BYTES);
        const written = outgoing.write(piece) || (await taken(outgoing, 'drain', writeTimeoutMs));
        if (!written || outgoing.destroyed) {
          await reader.cancel();
          return;
        }
      }
    }
    outgoing.end();
    await taken(outgoing, 'finish', writeTimeoutMs);
  } catch (error) {
    // The status line is out: a stream that fails midway can only be cut short.
    outgoing.destroy(error as Error);
  }
}

/**
 * Waits until the client has taken what is buffered (`drain`) or the whole answer (`finish`).
 * False when the connection closed first, or when the client took nothing for `timeoutMs`:
 * then the connection is reset, so that a client that stopped reading holds neither it nor
 * the rest of its answer. A reset rather than a close: a closed socket keeps its unsent
 * bytes in the kernel (up to net.ipv4.tcp_wmem's 4 MiB here) for as long as the client
 * keeps its window shut, where a reset drops them at once.
 */
function taken(
  outgoing: ServerResponse,
  event: 'drain' | 'finish',
  timeoutMs: number,
): Promise<boolean> {
  if (event === 'finish' && outgoing.writableFinished) return Promise.resolve(true);
  if (outgoing.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const settle = (ok: boolean): void => {
      clearTimeout(timer);
      outgoing.off(event, onEvent);
      outgoing.off('close', onClose);
      resolve(ok);
    };
    const onEvent = (): void => settle(true);
    const onClose = (): void => settle(false);
    const timer = setTimeout(() => {
      const { socket } = outgoing;
      if (socket === null) outgoing.destroy();
      else socket.resetAndDestroy();
      settle(false);
    }, timeoutMs);
    outgoing.on(event, onEvent);
    outgoing.on('close', onClose);
  });
}

/**
 * The request as the handler reads it, built lazily: the signal and the body stream only when
 * asked for (an AbortController's signal and a web stream cost microseconds each, and a GET
 * of a verify has no body).
 */
class NodeRequest implements HandlerRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;
  #signal: AbortSignal | undefined;
  #body: { stream: ReadableStream<Uint8Array>; finished: () => boolean } | null | undefined;

  constructor(
    private readonly incoming: IncomingMessage,
    private readonly outgoing: ServerResponse,
  ) {
    this.method = incoming.method ?? 'GET';
    this.url = urlOf(incoming);
    this.headers = headersOf(incoming);
    withRemoteAddress(this, incoming.socket.remoteAddress);
  }

  get signal(): AbortSignal {
    if (this.#signal === undefined) {
      const abort = new AbortController();
      this.#signal = abort.signal;
      const gone = (): void => {
        if (!this.outgoing.writableFinished) abort.abort(new Error('The client went away.'));
      };
      if (this.outgoing.closed) gone();
      else this.outgoing.once('close', gone);
    }
    return this.#signal;
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.#body === undefined) this.#body = bodyOf(this.incoming, this.outgoing) ?? null;
    return this.#body?.stream ?? null;
  }

  /** Whether the handler read the body to its end (or there was none). */
  bodyFinished(): boolean {
    if (this.#body === undefined) return bodyReceived(this.incoming);
    return this.#body === null || this.#body.finished();
  }

  /** A real Request, for fetch handlers that are not ours. */
  toRequest(): Request {
    const body = this.body;
    return withRemoteAddress(
      new Request(this.url, {
        method: this.method,
        headers: this.headers,
        signal: this.signal,
        ...(body === null ? {} : { body, duplex: 'half' }),
      }),
      this.incoming.socket.remoteAddress,
    );
  }
}

function urlOf(incoming: IncomingMessage): string {
  const path = incoming.url ?? '/';
  if (!path.startsWith('/')) return absoluteUrl(path);
  const host = incoming.headers.host;
  const url = `http://${host === undefined || host === '' ? 'localhost' : host}${path}`;
  // Throws on a Host that is no host, before any handler sees it.
  if (!URL.canParse(url)) throw new TypeError('malformed Host');
  return url;
}

/**
 * RFC 9112 3.2.2: a server must accept a request target in absolute form
 * (`GET http://host/v1/account`), and its authority stands in for Host. `*` (OPTIONS of the
 * server) and the authority form (CONNECT) name no resource of ours.
 */
function absoluteUrl(target: string): string {
  const url = URL.canParse(target) ? new URL(target) : undefined;
  if (url === undefined || !['http:', 'https:'].includes(url.protocol) || url.host === '') {
    throw new TypeError('request target in neither origin nor absolute form');
  }
  // The path as written, not url.pathname, which resolved its dot segments (rawPathname).
  return `http://${url.host}${rawPathname(target)}${url.search}`;
}

function headersOf(incoming: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = incoming.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    headers.append(raw[i] as string, raw[i + 1] as string);
  }
  return headers;
}

function hasBody(incoming: IncomingMessage): boolean {
  return (
    !NO_BODY.has(incoming.method ?? 'GET') ||
    incoming.headers['content-length'] !== undefined ||
    incoming.headers['transfer-encoding'] !== undefined
  );
}

/**
 * The request body as a web stream that reads from the socket only as fast as the handler
 * consumes it; cancelling it (the handler stopped at a limit) stops delivering. A client
 * waiting for `100 Continue` is told to send when the handler first reads. An upload that
 * breaks off fails the stream with a refusal that says why: 408 if the request ran past its
 * timeout, else 499, the client went away (neither is an error of ours).
 */
function bodyOf(
  incoming: IncomingMessage,
  outgoing: ServerResponse,
): { stream: ReadableStream<Uint8Array>; finished: () => boolean } | undefined {
  if (!hasBody(incoming)) return undefined;
  let ended = incoming.complete;
  incoming.once('end', () => {
    ended = true;
  });
  /** Whether the stream still takes chunks: not once closed, failed or cancelled. */
  let open = true;
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const fail = (): void => {
          if (!open || ended) return;
          open = false;
          controller.error(
            timedOut.has(incoming.socket) ? requestTimedOut() : clientClosedRequest(),
          );
        };
        incoming.on('data', (chunk: Buffer) => {
          if (!open) return;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) incoming.pause();
        });
        incoming.once('end', () => {
          if (!open) return;
          open = false;
          controller.close();
        });
        incoming.once('error', fail);
        incoming.once('close', fail);
        if (incoming.destroyed) fail();
        incoming.pause();
      },
      pull() {
        if (awaitingContinue.delete(outgoing)) outgoing.writeContinue();
        incoming.resume();
      },
      cancel() {
        open = false;
        incoming.removeAllListeners('data');
        incoming.pause();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: BODY_HIGH_WATER_MARK }),
  );
  return { stream, finished: () => ended };
}

function requestTimedOut(): HttpError {
  return new HttpError(408, 'request_timeout', 'The request was not received in time.');
}

export interface ServeOptions extends HandlerOptions {
  /**
   * The public base URL of the API, kept with each batch job for its `download_url` (see
   * HandlerOptions). Default: the service's `batch.baseUrl`, else the address the server
   * listens on, port included (listeningBaseUrl: a wildcard host stands for its loopback).
   */
  readonly baseUrl?: string;
  /**
   * Most header fields a request may carry; more is a 431 with the envelope. Default 100.
   */
  readonly maxHeadersCount?: number;
  /** Largest request line and headers together, in bytes; more is a 431. Default 16 KiB. */
  readonly maxHeaderBytes?: number;
  /**
   * How long a client has, from a request's first byte, to send its request line and headers;
   * then 408 and the connection is closed. Default 20 s.
   */
  readonly headersTimeoutMs?: number;
  /**
   * How long a client has to send a whole request, body included; then 408 (or, once it was
   * answered, the connection is closed). Default 300 s.
   */
  readonly requestTimeoutMs?: number;
  /** How long an idle keep-alive connection waits for its next request. Default 5 s. */
  readonly keepAliveTimeoutMs?: number;
  /**
   * How long a client may take nothing of an answer being written before the connection is
   * cut (NodeListenerOptions.writeTimeoutMs). Default 30 s.
   */
  readonly writeTimeoutMs?: number;
  /** Port to listen on; 0 (the default) picks a free one. */
  readonly port?: number;
  /** Address to listen on. Default: 127.0.0.1 (loopback: exposing it is a choice). */
  readonly hostname?: string;
  /** How long `close()` lets requests in flight finish. Default 30 s. */
  readonly shutdownTimeoutMs?: number;
  /**
   * Call the service's `start()` before listening (resume interrupted batch jobs, deliver
   * webhooks) and its `stop()` on close. Default true; false when the host runs them.
   */
  readonly startService?: boolean;
  /** `GET /health` and `GET /ready` for orchestrators (no key, no rate limit). Default true. */
  readonly health?: boolean;
  /**
   * `GET /metrics` in Prometheus text: the PrometheusMetrics (createPrometheusMetrics) whose
   * observer the engine and the service were built with, or `true` for a fresh registry that
   * counts HTTP requests and the process only (verdicts, DNS, SMTP, jobs and webhooks need
   * the observer at construction). Default false. Ignored when `operations` is given.
   */
  readonly metrics?: boolean | MetricsEndpoint;
}

/** The raw HTTP answer, with the envelope, to a request node refused while parsing it. */
function refusalOf(code: string | undefined): string {
  const refusal =
    code === 'HPE_HEADER_OVERFLOW'
      ? new HttpError(
          431,
          'request_header_fields_too_large',
          'The request line and headers are too large.',
          { field: 'headers' },
        )
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? requestTimedOut()
        : malformedRequest();
  const { status, body } = errorReply(refusal, () => undefined);
  const text = body as string;
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
    `content-type: application/json; charset=utf-8\r\n` +
    `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`
  );
}

/** A running server: where it listens, and how to stop it gracefully. */
export interface RunningServer {
  readonly server: Server;
  readonly port: number;
  /** `http://host:port`, for clients and tests. */
  readonly url: string;
  /** What `GET /metrics` serves, if it is served. */
  readonly metrics: MetricsEndpoint | undefined;
  /**
   * Stops accepting connections, lets requests in flight finish (up to the shutdown timeout,
   * then cuts them), closes idle keep-alive connections, and stops the service's running batch
   * jobs so that they resume on the next start. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Serves the /v1 API of `service` on node:http. The client IP a private key's
 * allow-list and a public key's daily limit see is the socket's peer address (X-Forwarded-For
 * only from `trustedProxies`).
 *
 * @example
 * import { serve } from 'mailverdict/node';
 * const server = await serve(service, { port: 8080 });
 * process.once('SIGTERM', () => void server.close());
 */
export async function serve(service: Service, options: ServeOptions = {}): Promise<RunningServer> {
  const owned = options.startService ?? true;
  const metrics = options.operations?.metrics ?? (await metricsOf(options.metrics));
  const operations = options.operations ?? {
    health: options.health ?? true,
    ...(metrics === undefined ? {} : { metrics }),
  };
  // A bad base URL throws now, before anything listens (createHandler checks them the same way).
  if (options.baseUrl !== undefined) baseUrlOf(options.baseUrl);
  if (options.defaultBaseUrl !== undefined) baseUrlOf(options.defaultBaseUrl);
  const headersTimeout = options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS;
  const requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  if (!(headersTimeout > 0 && requestTimeout >= headersTimeout)) {
    throw new RangeError(
      `headersTimeoutMs must be above 0 and requestTimeoutMs at least as long, got ${headersTimeout} and ${requestTimeout}`,
    );
  }
  const maxHeadersCount = options.maxHeadersCount ?? MAX_HEADERS_COUNT;
  const writeTimeoutMs = writeTimeoutOf(options.writeTimeoutMs);
  if (owned) await service.start();
  // Made once the port is known: download_url is built on the listening address by default.
  const made: { listener?: ReturnType<typeof createNodeListener> } = {};
  const active = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  /**
   * The answers each connection has yet to finish: a client error while one of them is being
   * written cuts the connection, since an answer of ours would land inside it.
   */
  const unfinished = new WeakMap<Socket, Set<ServerResponse>>();
  let closing: Promise<void> | undefined;
  let drained: (() => void) | undefined;

  const onRequest: RequestListener = (incoming, outgoing) => {
    active.add(outgoing);
    const { socket } = incoming;
    const answers = unfinished.get(socket) ?? new Set<ServerResponse>();
    unfinished.set(socket, answers.add(outgoing));
    if (closing !== undefined) outgoing.setHeader('connection', 'close');
    outgoing.once('finish', () => answers.delete(outgoing));
    outgoing.once('close', () => {
      answers.delete(outgoing);
      active.delete(outgoing);
      if (closing !== undefined) {
        server.closeIdleConnections();
        if (active.size === 0) drained?.();
      }
    });
    // Set before the first connection can be accepted: right after listening, in the same
    // tick as the 'listening' event (connections are read in a later phase of the loop).
    (made.listener as NonNullable<typeof made.listener>)(incoming, outgoing);
  };
  const server = createServer(
    {
      maxHeaderSize: options.maxHeaderBytes ?? MAX_HEADER_BYTES,
      headersTimeout,
      requestTimeout,
      keepAliveTimeout: options.keepAliveTimeoutMs ?? KEEP_ALIVE_TIMEOUT_MS,
      // How often node looks for requests past those timeouts: their precision.
      connectionsCheckingInterval: Math.max(10, Math.min(1_000, headersTimeout / 4)),
      // Node would answer a missing Host with an empty 400: the listener answers the envelope.
      requireHostHeader: false,
    },
    onRequest,
  );
  // One above ours: node drops the headers past its maximum silently, so seeing one more than
  // we allow is how the listener knows to refuse (431).
  server.maxHeadersCount = maxHeadersCount + 1;
  // A client that expects 100 Continue is answered by the handler first: a refusal (no key,
  // over a limit) reaches it before it sends a byte of its body. The body stream sends the
  // 100 when the handler starts reading (bodyOf).
  server.on('checkContinue', (incoming: IncomingMessage, outgoing: ServerResponse) => {
    awaitingContinue.add(outgoing);
    onRequest(incoming, outgoing);
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // Node answers what fails before a request reaches us (malformed HTTP, headers too large,
  // too slow) with a bare status: answer the envelope instead (refusalOf).
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') timedOut.add(socket);
    const writing = [...(unfinished.get(socket) ?? [])].some((answer) => answer.headersSent);
    const answered = writing || discarding.has(socket);
    if (error.code === 'ECONNRESET' || !socket.writable || answered) {
      socket.destroy();
      return;
    }
    const refuse = () => {
      if (!socket.writable) return;
      socket.end(refusalOf(error.code));
      // The client gets a moment to read the answer; a connection still open then is cut.
      const linger = setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS);
      linger.unref();
      socket.once('close', () => clearTimeout(linger));
    };
    // Bytes that fail to parse after a whole request (pipelined, or trailing garbage) come
    // while that request is still being answered: it is answered first, in order (RFC 9112
    // 9.3.2), then the refusal. Written at once, the refusal took the answer's place and the
    // request, charged, looked refused. A timeout is that request's own failure: its reader
    // answers it (timedOut), and nothing waits. Nor do bytes that fail inside a request's own
    // body (a bad chunk size): that body never ends, so its answer would never come.
    const pending = [...(unfinished.get(socket) ?? [])];
    if (
      pending.length === 0 ||
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ||
      pending.some((answer) => !answer.req.complete)
    ) {
      refuse();
      return;
    }
    let left = pending.length;
    for (const answer of pending) {
      answer.once('close', () => {
        if (--left === 0) refuse();
      });
    }
  });

  const hostname = options.hostname ?? '127.0.0.1';
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, hostname, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    if (owned) await service.stop();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const host = hostname.includes(':') ? `[${hostname}]` : hostname;
  const defaultBaseUrl = options.defaultBaseUrl ?? listeningBaseUrl(hostname, port);
  made.listener = createNodeListener(
    createHandler(service, { ...options, operations, defaultBaseUrl }),
    {
      maxHeadersCount,
      ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
      writeTimeoutMs,
    },
  );

  return {
    server,
    port,
    url: `http://${host}:${port}`,
    metrics,
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        if (active.size > 0) {
          const finished = new Promise<void>((resolve) => {
            drained = resolve;
          });
          const timeout = options.shutdownTimeoutMs ?? SHUTDOWN_TIMEOUT_MS;
          let timer: NodeJS.Timeout | undefined;
          const expired = new Promise<void>((resolve) => {
            timer = setTimeout(resolve, timeout);
          });
          await Promise.race([finished, expired]);
          clearTimeout(timer);
        }
        for (const socket of sockets) socket.destroy();
        await stopped;
        // Running batch jobs stay `processing` and resume on the next start.
        if (owned) await service.stop();
      })();
      return closing;
    },
  };
}

/**
 * The base URL of a server that was given none: the address it listens on, port included
 * (`http://127.0.0.1:8787/`). A wildcard address (`0.0.0.0`, `::`) is every address and names
 * none a client could use: the loopback address of its family stands for it, the one that
 * surely reaches this server. Give `baseUrl` when clients come by another name.
 */
export function listeningBaseUrl(hostname: string, port: number): string {
  let host = hostname;
  if (ipaddr.isValid(hostname) && ipaddr.parse(hostname).range() === 'unspecified') {
    host = hostname.includes(':') ? '::1' : '127.0.0.1';
  }
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}/`;
}

/**
 * Prometheus metrics (adapters/prometheus/metrics.ts): give `observer` to createEngine and
 * createService, and the whole to serve()'s `metrics`. Loaded on demand: importing prom-client
 * takes about 45 ms (node -e, measured here), half again mailverdict/node's cold start.
 *
 * @example
 * const metrics = await loadPrometheusMetrics();
 * const engine = createEngine({ observer: metrics.observer });
 * const service = createService({ engine, store, observer: metrics.observer });
 * const server = await serve(service, { metrics }); // GET /metrics
 */
export async function loadPrometheusMetrics(
  options?: PrometheusMetricsOptions,
): Promise<PrometheusMetrics> {
  const { createPrometheusMetrics } = await import('../adapters/prometheus/metrics.js');
  return createPrometheusMetrics(options);
}

/** The metrics endpoint `metrics` asks for. */
async function metricsOf(
  metrics: boolean | MetricsEndpoint | undefined,
): Promise<MetricsEndpoint | undefined> {
  if (metrics === undefined || metrics === false) return undefined;
  return metrics === true ? loadPrometheusMetrics() : metrics;
}
