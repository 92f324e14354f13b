import { createConnection, type Socket } from 'node:net';

/** One HTTP/1.1 answer as it came off the socket. */
export interface RawAnswer {
  readonly status: number;
  /** Lowercase names; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Whether the server had closed the connection by the time the answer was whole. */
  readonly closed: boolean;
}

/**
 * Writes `request` on a fresh connection to 127.0.0.1:`port` as it is (no client library to
 * normalize its path, add a Host or stop at the answer) and resolves with the first final
 * answer: complete by its Content-Length, or cut by the server closing. `write` may go on
 * writing after the request's head (a body, slowly, or forever).
 */
export function rawRequest(
  port: number,
  request: string | Uint8Array,
  write?: (socket: Socket) => void,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(port, '127.0.0.1', () => {
      socket.write(request);
      write?.(socket);
    });
    let received = Buffer.alloc(0);
    let done = false;
    const finish = (closed: boolean): void => {
      const answer = parse(received, closed);
      if (answer === undefined) {
        if (closed) reject(new Error(`the connection closed after: ${received.toString()}`));
        return;
      }
      done = true;
      socket.destroy();
      resolve(answer);
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (!done) finish(false);
    });
    socket.on('close', () => {
      if (!done) finish(true);
    });
    // A reset after the answer arrived is the server hanging up on a body it will not read.
    socket.on('error', () => undefined);
  });
}

/** The first final answer in `bytes`, once whole; interim 1xx answers are skipped. */
function parse(bytes: Buffer, closed: boolean): RawAnswer | undefined {
  let text = bytes.toString('latin1');
  for (;;) {
    const end = text.indexOf('\r\n\r\n');
    if (end === -1) return undefined;
    const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
    const status = Number(statusLine.split(' ')[1]);
    if (status >= 100 && status < 200) {
      text = text.slice(end + 4);
      continue;
    }
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const body = text.slice(end + 4);
    const length = headers['content-length'];
    if (length !== undefined && Buffer.byteLength(body, 'latin1') < Number(length)) {
      return undefined;
    }
    if (length === undefined && !closed) return undefined;
    return {
      status,
      headers,
      body: Buffer.from(
        length === undefined ? body : body.slice(0, Number(length)),
        'latin1',
      ).toString('utf8'),
      closed,
    };
  }
}
