import {
  createServer,
  request as upstreamRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * What the proxy does with one request:
 * - `pass`: forwards it and relays the answer;
 * - `answer`: answers itself (a 429, a 503, a redirect), without forwarding;
 * - `reset`: destroys the connection before forwarding anything;
 * - `lose-answer`: forwards it, waits for the whole answer, then destroys the connection (the
 *   server did the work; the client never hears of it);
 * - `cut-body`: forwards it, relays the status, headers and the first `bytes` of the body,
 *   then destroys the connection;
 * - `raw`: writes these bytes as the whole HTTP answer, then closes (`end`) or destroys
 *   (`reset`) the connection, or leaves it open (`hang`);
 * - `flood`: answers 200 with `contentLength` announced (or chunked) and writes `bytes` of
 *   JSON-ish text at the pace the client reads, never holding them;
 * - `hang`: never answers.
 */
export type Fault =
  | { readonly kind: 'pass' }
  | {
      readonly kind: 'answer';
      readonly status: number;
      readonly headers?: Readonly<Record<string, string>>;
      readonly body?: string;
    }
  | { readonly kind: 'reset' }
  | { readonly kind: 'lose-answer' }
  | { readonly kind: 'cut-body'; readonly bytes: number }
  | { readonly kind: 'raw'; readonly data: string; readonly end: 'end' | 'reset' | 'hang' }
  | { readonly kind: 'flood'; readonly bytes: number; readonly contentLength?: number }
  | { readonly kind: 'hang' };

/** One request the proxy saw, and what it did with it. */
export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly fault: Fault['kind'];
}

export interface FaultProxy {
  /** The proxy's origin: give it to the client as baseUrl. */
  readonly url: string;
  readonly seen: SeenRequest[];
  /** Decides each request's fault from the request and how many came before it (0-based). */
  plan(decide: (request: IncomingMessage, index: number) => Fault): void;
  close(): Promise<void>;
}

const PASS: Fault = { kind: 'pass' };

/**
 * A loopback HTTP proxy in front of `upstream` (an http:// origin) that injects the faults a
 * client must survive: refusals, resets before, during and after the answer, lost answers,
 * garbage, bodies shorter or far longer than announced, and silence.
 */
export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const target = new URL(upstream);
  const seen: SeenRequest[] = [];
  let decide: (request: IncomingMessage, index: number) => Fault = () => PASS;
  const sockets = new Set<Socket>();

  const server: Server = createServer((request, response) => {
    const fault = decide(request, seen.length);
    seen.push({
      method: request.method ?? '',
      url: request.url ?? '',
      headers: request.headers,
      fault: fault.kind,
    });
    apply(fault, request, response);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  function forward(
    request: IncomingMessage,
    onAnswer: (answer: IncomingMessage) => void,
    response: ServerResponse,
  ) {
    const outgoing = upstreamRequest(
      {
        host: target.hostname,
        port: target.port,
        method: request.method,
        path: request.url,
        headers: { ...request.headers, host: target.host },
      },
      onAnswer,
    );
    outgoing.on('error', () => response.socket?.destroy());
    request.pipe(outgoing);
  }

  function apply(fault: Fault, request: IncomingMessage, response: ServerResponse): void {
    const socket = response.socket as Socket;
    switch (fault.kind) {
      case 'pass':
        return forward(
          request,
          (answer) => {
            response.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(response);
          },
          response,
        );
      case 'answer':
        request.resume();
        response.writeHead(fault.status, {
          'content-type': 'application/json',
          ...fault.headers,
        });
        response.end(fault.body ?? '');
        return;
      case 'reset':
        request.resume();
        socket.destroy();
        return;
      case 'lose-answer':
        return forward(
          request,
          (answer) => {
            answer.resume();
            answer.on('end', () => socket.destroy());
          },
          response,
        );
      case 'cut-body':
        return forward(
          request,
          (answer) => {
            response.writeHead(answer.statusCode ?? 502, answer.headers);
            let left = fault.bytes;
            answer.on('data', (chunk: Buffer) => {
              if (left <= 0) return;
              const part = chunk.subarray(0, left);
              left -= part.length;
              response.write(part);
              // Flushed first: the client must see the bytes before the connection breaks.
              if (left <= 0) response.write('', () => socket.destroy());
            });
          },
          response,
        );
      case 'raw':
        request.resume();
        socket.write(fault.data, () => {
          if (fault.end === 'end') socket.end();
          else if (fault.end === 'reset') socket.destroy();
        });
        return;
      case 'flood':
        request.resume();
        flood(socket, fault.bytes, fault.contentLength);
        return;
      case 'hang':
        request.resume();
        return;
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    plan(next) {
      decide = next;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Writes `bytes` of `aaaa...` on the raw socket as fast as the client reads them, never
 * holding more than a chunk: after `contentLength` announced, or close-delimited without one.
 */
function flood(socket: Socket, bytes: number, contentLength: number | undefined): void {
  const length = contentLength === undefined ? '' : `Content-Length: ${contentLength}\r\n`;
  socket.write(
    `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${length}Connection: close\r\n\r\n`,
  );
  const chunk = Buffer.alloc(64 * 1024, 'a');
  let left = bytes;
  const pump = () => {
    while (left > 0) {
      const part = left >= chunk.length ? chunk : chunk.subarray(0, left);
      left -= part.length;
      flooded.written += part.length;
      if (!socket.write(part)) return void socket.once('drain', pump);
    }
    socket.end();
  };
  socket.on('close', () => (left = 0));
  socket.on('error', () => (left = 0));
  pump();
}

/** Bytes the floods of this process wrote: what a client that stops reading early stopped. */
export const flooded = { written: 0 };
