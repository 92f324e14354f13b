import type { HandlerRequest } from './exchange.js';
import { shown } from './query.js';
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
  const coding = request.headers.get('content-encoding');
  if (coding !== null && coding.trim().toLowerCase() !== 'identity') {
    // RFC 9110 15.5.16: a content coding we do not decode is a 415, not a body that "is not JSON".
    throw new HttpError(
      415,
      'unsupported_media_type',
      'The body must not be compressed: send it without Content-Encoding.',
      { field: 'content-encoding' },
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
  const repeated = repeatedMember(text, value);
  if (repeated !== undefined) {
    // JSON.parse keeps the last of two `emails`; a proxy or a log may read the first. As with a
    // repeated query parameter, neither is picked silently.
    throw badRequest(
      shown(repeated),
      `The field ${JSON.stringify(shown(repeated))} is given more than once.`,
    );
  }
  return value as Record<string, unknown>;
}

/**
 * The first member name the top-level object of `text` (valid JSON, parsed as `value`) repeats,
 * or undefined. Only the top level: every field we take is a string or an array of strings, so
 * a nested object is refused for its type anyway. A first walk only counts the names (JSON.parse
 * keeps one member per name, so a repeat shows as a count above `value`'s); names are read only
 * when there is one to find. Strings are skipped with indexOf, so a 13 MB batch costs a step
 * per string and per character between strings (about two per address), not one per character.
 */
function repeatedMember(text: string, value: object): string | undefined {
  if (walkMembers(text, () => false) === Object.keys(value).length) return undefined;
  const names = new Set<string>();
  let repeated: string | undefined;
  walkMembers(text, (start, end) => {
    const raw = text.slice(start + 1, end);
    const name = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
    if (names.has(name)) repeated = name;
    names.add(name);
    return repeated !== undefined;
  });
  return repeated;
}

/**
 * Calls `member` with the quotes around each top-level member name of `text` until it returns
 * true; returns how many names it passed.
 */
function walkMembers(text: string, member: (start: number, end: number) => boolean): number {
  let count = 0;
  let depth = 0;
  let expectName = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (char === QUOTE) {
      const end = stringEnd(text, i);
      if (depth === 1 && expectName) {
        count++;
        if (member(i, end)) return count;
        expectName = false;
      }
      i = end;
    } else if (char === OPEN_BRACE || char === OPEN_BRACKET) {
      depth++;
      expectName = depth === 1;
    } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
      depth--;
    } else if (char === COMMA && depth === 1) {
      expectName = true;
    }
  }
  return count;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** The index of the quote that closes the string opening at `start` (an odd run of \ escapes). */
function stringEnd(text: string, start: number): number {
  let end = text.indexOf('"', start + 1);
  for (;;) {
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
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
        shown(name),
        `Unknown field ${JSON.stringify(shown(name))}: allowed are ${allowed.join(', ')}.`,
      );
    }
  }
}
