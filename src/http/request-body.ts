import { JsonShape, repeatedMember } from './json-shape.js';
import { shown } from './query.js';
import { badRequest, clientClosedRequest, HttpError } from './responses.js';

/**
 * Largest JSON body a POST may send. A batch of 50,000 addresses of the longest legal length
 * (254 octets, RFC 5321 4.5.3.1.3 with errata) and their JSON punctuation fits in 13 MB.
 */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;
/** Deepest a JSON body may nest: ours nest two levels (`{"emails":[...]}`). */
export const MAX_JSON_DEPTH = 16;
/**
 * Most elements a JSON body may hold (each array element and object member, about): twice a
 * batch of 50,000 addresses, so that 50,001 is told it is over the batch limit, not this one.
 */
export const MAX_JSON_ELEMENTS = 100_000;

/** How much of a JSON body is read before it is refused. */
export interface BodyLimits {
  /** Bytes; more is a 413. */
  readonly maxBytes: number;
  /** Nesting depth of arrays and objects; deeper is a 400. */
  readonly maxDepth: number;
  /** Array elements and object members; more is a 400. */
  readonly maxElements: number;
}

/**
 * What the headers of a POST tell before a byte of its body is read, so that it is refused
 * before its key is looked up: a type other than JSON, a content coding, or a declared
 * Content-Length over the limit.
 */
export function checkJsonHeaders(headers: Headers, maxBytes: number): void {
  const type = headers.get('content-type');
  if (type === null || !isJsonType(type)) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      'The body must be JSON: send Content-Type: application/json.',
      { field: 'content-type' },
    );
  }
  const coding = headers.get('content-encoding');
  if (coding !== null && coding.trim().toLowerCase() !== 'identity') {
    // RFC 9110 15.5.16: a content coding we do not decode is a 415, not a body that "is not JSON".
    throw new HttpError(
      415,
      'unsupported_media_type',
      'The body must not be compressed: send it without Content-Encoding.',
      { field: 'content-encoding' },
    );
  }
  const declared = headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
}

/**
 * The JSON object a POST sends, read through its stream and refused as soon as it passes a
 * limit: past `maxBytes` a 413, nested deeper than `maxDepth` or holding more than
 * `maxElements` a 400, each found on the bytes as they arrive (JsonShape), so that neither a
 * 20 MB body nor 16 MB of `[[[[` is ever held or parsed. Its headers were checked first
 * (checkJsonHeaders).
 */
export async function readJsonObject(
  request: Pick<Request, 'body'>,
  limits: BodyLimits,
): Promise<Record<string, unknown>> {
  const shape = new JsonShape(limits.maxDepth, limits.maxElements);
  const text = await readText(request, limits, shape);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('body', 'The body is not valid JSON.');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badRequest('body', 'The body must be a JSON object.');
  }
  // JSON.parse keeps the last of two `emails`; a proxy or a log may read the first. As with a
  // repeated query parameter, neither is picked silently. JSON.parse keeps one member per
  // name, so a repeat shows as more names read than members kept.
  if (shape.topLevelMembers !== Object.keys(value).length) {
    const repeated = repeatedMember(text);
    if (repeated !== undefined) {
      throw badRequest(
        shown(repeated),
        `The field ${JSON.stringify(shown(repeated))} is given more than once.`,
      );
    }
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

async function readText(
  request: Pick<Request, 'body'>,
  limits: BodyLimits,
  shape: JsonShape,
): Promise<string> {
  if (request.body === null) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let read: Awaited<ReturnType<typeof reader.read>>;
    try {
      read = await reader.read();
    } catch (error) {
      // The host's refusal (a timeout it answers), else the upload broke off: the client
      // went away, which is no error of ours.
      throw error instanceof HttpError ? error : clientClosedRequest();
    }
    if (read.done) break;
    const { value } = read;
    size += value.byteLength;
    const passed = size > limits.maxBytes ? 'bytes' : shape.scan(value);
    if (passed !== undefined) {
      // Stop reading: the host discards (or closes) the rest, we never hold it.
      await reader.cancel().catch(() => undefined);
      throw overLimit(passed, limits);
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

function overLimit(limit: 'bytes' | 'depth' | 'elements', limits: BodyLimits): HttpError {
  switch (limit) {
    case 'bytes':
      return tooLarge(limits.maxBytes);
    case 'depth':
      return badRequest('body', `The body nests JSON deeper than ${limits.maxDepth} levels.`);
    case 'elements':
      return badRequest('body', `The body holds more than ${limits.maxElements} JSON elements.`);
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
