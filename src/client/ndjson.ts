import { NetworkError } from './errors.js';
import { concat, parseJsonObject } from './transport.js';

const NEWLINE = 0x0a;

/**
 * The JSON objects of an NDJSON byte stream, one a line, parsed as the bytes arrive: only the
 * line being read is held, and a line longer than `maxLineBytes` is refused before it is whole,
 * so that a body without newlines cannot grow our memory. A stream that ends inside a line was
 * cut short (a connection_failed NetworkError, which the caller may retry).
 */
export async function* ndjsonObjects(
  chunks: AsyncIterable<Uint8Array>,
  maxLineBytes: number,
  what: string,
): AsyncGenerator<Record<string, unknown>> {
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  const tooLong = () =>
    new NetworkError('invalid_response', `${what}: a line longer than ${maxLineBytes} bytes`);
  for await (const chunk of chunks) {
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end >= 0; end = chunk.indexOf(NEWLINE, start)) {
      const piece = chunk.subarray(start, end);
      start = end + 1;
      const size = pendingBytes + piece.byteLength;
      if (size > maxLineBytes) throw tooLong();
      const line = pendingBytes === 0 ? piece : concat([...pending, piece], size);
      pending = [];
      pendingBytes = 0;
      if (!isBlank(line)) yield parseJsonObject(line, what);
    }
    if (start < chunk.byteLength) {
      pendingBytes += chunk.byteLength - start;
      if (pendingBytes > maxLineBytes) throw tooLong();
      pending.push(chunk.subarray(start));
    }
  }
  if (pendingBytes === 0) return;
  const last = concat(pending, pendingBytes);
  if (isBlank(last)) return;
  let record: Record<string, unknown>;
  try {
    record = parseJsonObject(last, what);
  } catch (error) {
    throw new NetworkError('connection_failed', `${what}: the answer ended inside a record`, error);
  }
  yield record;
}

/** Only spaces, tabs and CRs: a blank line, or the CR of a CRLF. */
function isBlank(line: Uint8Array): boolean {
  return line.every((byte) => byte === 0x20 || byte === 0x09 || byte === 0x0d);
}
