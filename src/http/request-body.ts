import type { HandlerRequest } from './exchange.js';
import { badRequest, HttpError } from './responses.js';

/**
 * Largest JSON body a POST may send. A batch of 50,000 addresses of the longest legal length
 * (254 octets, RFC 5321 4.5.3.1.3 with errata) and their JSON punctuation fits in 13 MB.
 */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/**
 * The JSON object a POST sends, read through its stream and refused with 413 as soon as it
 * passes `limit` bytes, so that a 20 MB body is never held: the declared Content-Length is
 * refused before a byte is read, and a chunked body is counted as it arrives.
 */
export async function readJsonObject(
  request: HandlerRequest,
  limit: number,
): Promise<Record<string, unknown>> {
  const type = request.headers.get('content-type');
  if (type === null || !isJsonType(type)) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      'The body must be JSON: send Content-Type: application/json.',
      { field: 'content-type' },
    );
  }
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  const text = await readText(request, limit);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('body', 'The body is not valid JSON.');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badRequest('body', 'The body must be a JSON object.');
  }
  return value as Record<string, unknown>;
}

/** `application/json` or a `+json` type, with any parameters; only UTF-8 if a charset is named. */
function isJsonType(header: string): boolean {
  const [essence = '', ...parameters] = header.toLowerCase().split(';');
  const type = essence.trim();
  if (type !== 'application/json' && !(type.startsWith('application/') && type.endsWith('+json'))) {
    return false;
  }
  return parameters.every((parameter) => {
    const [name = '', value = ''] = parameter.split('=');
    return name.trim() !== 'charset' || value.trim().replace(/"/g, '') === 'utf-8';
  });
}

async function readText(request: HandlerRequest, limit: number): Promise<string> {
  if (request.body === null) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // Stop reading: the host discards (or closes) the rest, we never hold it.
      await reader.cancel().catch(() => undefined);
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw badRequest('body', 'The body is not valid UTF-8.');
  }
}

function tooLarge(limit: number): HttpError {
  return new HttpError(413, 'payload_too_large', `The body is larger than ${limit} bytes.`, {
    limit,
  });
}

/** Refuses any member of a JSON body not in `allowed`, naming it (a typo is never ignored). */
export function onlyFields(
  body: Readonly<Record<string, unknown>>,
  allowed: readonly string[],
): void {
  for (const name of Object.keys(body)) {
    if (!allowed.includes(name)) {
      throw badRequest(
        name,
        `Unknown field ${JSON.stringify(name)}: allowed are ${allowed.join(', ')}.`,
      );
    }
  }
}
