import type { MethodName } from '../engine/methods.js';
import {
  parseFields,
  selectFields,
  toCompact,
  toDetailed,
  toShapeB,
  UnknownFieldError,
  type DetailedField,
} from '../format/shapes.js';
import type { Verdict } from '../engine/verdict.js';
import { optional } from '../optional.js';
import { methodOf } from '../service/request-fields.js';
import { ServiceError } from '../service/service-error.js';
import { CONTROL_CHARACTER } from '../service/validate.js';
import type { Exchange } from './exchange.js';
import { idempotencyKey, namingIdempotencyKey } from './idempotency-key.js';
import { booleanParameter } from './query.js';
import { badRequest, HttpError, json, type Reply } from './responses.js';

const FORM_A_ONLY = ['method', 'detailed', 'fields'];
/**
 * Longest `site_source` echoed back: a page name or URL, not a document. Without control
 * characters: never echoed into a JSON answer a page may put in its DOM or a log.
 */
export const MAX_SITE_SOURCE_LENGTH = 500;

/** What the response looks like (README, "Result shapes"). */
type Shape =
  | { kind: 'compact' }
  | { kind: 'detailed' }
  | { kind: 'fields'; fields: readonly DetailedField[] }
  | { kind: 'b'; siteSource: string | undefined };

/**
 * GET /v1/verify: one address, in shape A (`method`, `detailed`, `fields`) or, when a form B
 * parameter (`smtp`, `site_source`) is present, shape B. Every parameter is checked before the
 * key is looked up: a malformed request costs nothing, not even a rate-limit hit.
 */
export async function verifyRoute(exchange: Exchange): Promise<Reply> {
  const { query } = exchange;
  const email = query.get('email');
  if (email === undefined || email === '') throw badRequest('email', 'email is required.');
  const { method, shape } = shapeOf(query);
  const requestId = idempotencyKey(exchange.request);
  const caller = await exchange.authenticate('verify', query.get('api_key'));
  // The client's going away aborts a verification that waits on DNS or SMTP. An offline
  // engine answers without waiting, and the signal is the costliest thing about a request on
  // Node 20: mailverdict/node made 12,600 answers/s without reading it, 7,500 with (measured).
  const waits = method === 'smtp' || exchange.service.engine.dns.offline !== true;
  let verdict: Verdict;
  try {
    const verify = () =>
      exchange.service.verify(caller, email, {
        method,
        ...optional('signal', waits ? exchange.request.signal : undefined),
        ...optional('requestId', requestId),
        ...optional('shape', requestId === undefined ? undefined : shapeKey(shape)),
      });
    // Only a request with the header can be refused about it: the others skip the wrapper's
    // extra await on the hot path.
    ({ verdict } = await (requestId === undefined ? verify() : namingIdempotencyKey(verify)));
  } catch (error) {
    // The service refuses the smtp method on an engine that cannot probe, naming `method`;
    // in form B the caller asked for it with `smtp`, and is told to send smtp=false.
    if (
      shape.kind === 'b' &&
      error instanceof ServiceError &&
      error.code === 'invalid_request' &&
      error.context.field === 'method'
    ) {
      throw badRequest(
        'smtp',
        'This server cannot probe mailboxes (it runs offline): send smtp=false.',
      );
    }
    throw error;
  }
  switch (shape.kind) {
    case 'b':
      return json(200, toShapeB(verdict, shape.siteSource));
    case 'fields':
      return json(200, selectFields(verdict, shape.fields));
    case 'detailed':
      return json(200, toDetailed(verdict));
    case 'compact':
      return json(200, toCompact(verdict));
  }
}

/** The shape as the idempotency fingerprint binds it: two spellings of one shape agree. */
function shapeKey(shape: Shape): string {
  switch (shape.kind) {
    case 'b':
      return shape.siteSource === undefined ? 'b' : `b:${shape.siteSource}`;
    case 'fields':
      return `fields:${shape.fields.join(',')}`;
    case 'detailed':
    case 'compact':
      return shape.kind;
  }
}

function shapeOf(query: ReadonlyMap<string, string>): { method: MethodName; shape: Shape } {
  if (query.has('smtp') || query.has('site_source')) {
    const mixed = FORM_A_ONLY.find((name) => query.has(name));
    if (mixed !== undefined) {
      throw badRequest(
        mixed,
        `${mixed} belongs to shape A and cannot be mixed with smtp or site_source (shape B).`,
      );
    }
    const siteSource = query.get('site_source');
    if (
      siteSource !== undefined &&
      (siteSource.length > MAX_SITE_SOURCE_LENGTH || CONTROL_CHARACTER.test(siteSource))
    ) {
      throw badRequest(
        'site_source',
        `site_source must be at most ${MAX_SITE_SOURCE_LENGTH} characters without control characters.`,
      );
    }
    // In form B, smtp=true (the default) is the smtp method, smtp=false standard.
    const smtp = booleanParameter(query, 'smtp') ?? true;
    return { method: smtp ? 'smtp' : 'standard', shape: { kind: 'b', siteSource } };
  }
  const method = methodOf(query.get('method'));
  const detailed = booleanParameter(query, 'detailed');
  const selection = query.get('fields');
  if (selection === undefined) {
    return { method, shape: { kind: detailed === true ? 'detailed' : 'compact' } };
  }
  if (detailed === false) {
    throw badRequest('fields', 'fields selects from the detailed shape: drop detailed=false.');
  }
  try {
    return { method, shape: { kind: 'fields', fields: parseFields(selection) } };
  } catch (error) {
    if (!(error instanceof UnknownFieldError)) throw error;
    throw new HttpError(400, 'invalid_request', error.message, {
      field: 'fields',
      allowed: error.allowed,
    });
  }
}
