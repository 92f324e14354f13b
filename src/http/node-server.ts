import {
  createServer,
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

/** How long `close()` waits for requests in flight before cutting their connections. */
export const SHUTDOWN_TIMEOUT_MS = 30_000;
/** Bytes of request body buffered ahead of the handler's reading: back-pressure beyond. */
const BODY_HIGH_WATER_MARK = 64 * 1024;

const NO_BODY = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE']);

/**
 * A node:http request listener for a fetch handler. A handler from createHandler is called at
 * its Reply level with a light stand-in for the Request (url, method, headers, a body stream
 * read as the handler asks, a signal aborted when the client goes away, the socket's address
 * for `clientIp`) and its Reply written straight to the socket; any other fetch handler gets
 * a real Request and its Response is written back with back-pressure.
 */
export function createNodeListener(handler: FetchHandler): RequestListener {
  const replies = replyHandlerOf(handler);
  return (incoming, outgoing) => {
    void answer(handler, replies, incoming, outgoing).catch((error: unknown) => {
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

async function answer(
  handler: FetchHandler,
  replies: ReplyHandler | undefined,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
): Promise<void> {
  let request: NodeRequest;
  try {
    request = new NodeRequest(incoming, outgoing);
  } catch {
    outgoing.writeHead(400, {
      'content-type': 'application/json; charset=utf-8',
      connection: 'close',
    });
    outgoing.end(
      JSON.stringify({
        error: 'invalid_request',
        message: 'The request line or a header is malformed.',
      }),
    );
    return;
  }
  let status: number;
  let headers: Record<string, string | string[]>;
  let body: string | ReadableStream<Uint8Array> | null;
  if (replies !== undefined) {
    ({ status, headers, body } = await replies(request));
  } else {
    const response = await handler(request.toRequest());
    status = response.status;
    headers = {};
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    body = response.body;
  }
  // A body the handler did not read to the end (a 413, an early refusal) is not drained: the
  // connection closes after the answer instead of swallowing megabytes for keep-alive.
  if (!request.bodyFinished()) headers = { ...headers, connection: 'close' };
  if (body === null || typeof body === 'string') {
    // A length, so that node sends no chunked encoding: one end() with the headers is then one
    // write, one packet. Without it the closing chunk went out as a second buffer and every
    // answer took a writev (a third of the server's time under autocannon, bench/).
    // A HEAD's answer has no body but the length its GET would have had, if known; a 204
    // carries no Content-Length at all (RFC 9110 8.6).
    if (body !== null || (request.method !== 'HEAD' && status !== 204 && status !== 304)) {
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
    return;
  }
  outgoing.writeHead(status, headers);
  await pipeBody(body, outgoing);
}

async function pipeBody(body: ReadableStream<Uint8Array>, outgoing: ServerResponse): Promise<void> {
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!outgoing.write(value)) {
        await new Promise<void>((resolve) => {
          const resume = (): void => {
            outgoing.off('drain', resume);
            outgoing.off('close', resume);
            resolve();
          };
          outgoing.on('drain', resume);
          outgoing.on('close', resume);
        });
      }
      if (outgoing.destroyed) {
        await reader.cancel();
        return;
      }
    }
    outgoing.end();
  } catch (error) {
    // The status line is out: a stream that fails midway can only be cut short.
    outgoing.destroy(error as Error);
  }
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
    if (this.#body === undefined) this.#body = bodyOf(this.incoming) ?? null;
    return this.#body?.stream ?? null;
  }

  /** Whether the handler read the body to its end (or there was none). */
  bodyFinished(): boolean {
    if (this.#body === undefined) return !hasBody(this.incoming) || this.incoming.complete;
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
  return `http://${url.host}${url.pathname}${url.search}`;
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
 * consumes it; cancelling it (the handler stopped at its size cap) stops delivering.
 */
function bodyOf(
  incoming: IncomingMessage,
): { stream: ReadableStream<Uint8Array>; finished: () => boolean } | undefined {
  if (!hasBody(incoming)) return undefined;
  let ended = incoming.complete;
  incoming.once('end', () => {
    ended = true;
  });
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        incoming.on('data', (chunk: Buffer) => {
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) incoming.pause();
        });
        incoming.once('end', () => controller.close());
        incoming.once('error', (error) => controller.error(error));
        incoming.pause();
      },
      pull() {
        incoming.resume();
      },
      cancel() {
        incoming.removeAllListeners('data');
        incoming.pause();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: BODY_HIGH_WATER_MARK }),
  );
  return { stream, finished: () => ended };
}

export interface ServeOptions extends HandlerOptions {
  /**
   * The public base URL of the API, kept with each batch job for its `download_url` (see
   * HandlerOptions). Default: the service's `batch.baseUrl`, else the address the server
   * listens on, port included (listeningBaseUrl: a wildcard host stands for its loopback).
   */
  readonly baseUrl?: string;
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
 * Serves the /v1 API of `service` on node:http (DESIGN 7). The client IP a private key's
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
  if (owned) await service.start();
  // Made once the port is known: download_url is built on the listening address by default.
  const made: { listener?: ReturnType<typeof createNodeListener> } = {};
  const active = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  let closing: Promise<void> | undefined;
  let drained: (() => void) | undefined;

  const server = createServer((incoming, outgoing) => {
    active.add(outgoing);
    if (closing !== undefined) outgoing.setHeader('connection', 'close');
    outgoing.once('close', () => {
      active.delete(outgoing);
      if (closing !== undefined) {
        server.closeIdleConnections();
        if (active.size === 0) drained?.();
      }
    });
    // Set before the first connection can be accepted: right after listening, in the same
    // tick as the 'listening' event (connections are read in a later phase of the loop).
    (made.listener as NonNullable<typeof made.listener>)(incoming, outgoing);
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // Node answers malformed requests (a request line or headers over 16 KB) itself, without a
  // body: answer the envelope instead.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify({
      error: 'invalid_request',
      message:
        error.code === 'HPE_HEADER_OVERFLOW'
          ? 'The request line and headers are too large.'
          : 'The request is not valid HTTP.',
      field: 'headers',
    });
    socket.end(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
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
        // Running batch jobs stay `processing` and resume on the next start (DESIGN 5.5).
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
