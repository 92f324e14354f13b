import { METHOD_NAMES, type MethodName } from '../engine/methods.js';
import { optional } from '../optional.js';
import { MAX_BATCH_EMAILS } from '../service/batch/submit.js';
import type { ResultsFormat } from '../service/service.js';
import type { Exchange } from './exchange.js';
import { readQuery } from './query.js';
import { onlyFields, readJsonObject } from './request-body.js';
import { badRequest, json, type Reply } from './responses.js';
import { routeId } from './route-id.js';

const BATCH_FIELDS = ['emails', 'method', 'callback_url'];
const FORMATS: readonly ResultsFormat[] = ['json', 'csv', 'ndjson'];

/** POST /v1/verify `{emails, method?, callback_url?}` -> 202 with the job. */
export async function submitBatchRoute(exchange: Exchange): Promise<Reply> {
  const query = readQuery(exchange.url, ['api_key']);
  const body = await readJsonObject(exchange.request, exchange.config.maxBodyBytes);
  onlyFields(body, BATCH_FIELDS);
  const { emails, method, callback_url: callbackUrl } = body;
  if (!Array.isArray(emails) || emails.length === 0 || emails.length > MAX_BATCH_EMAILS) {
    throw badRequest('emails', `emails must be an array of 1 to ${MAX_BATCH_EMAILS} strings.`);
  }
  const notText = emails.findIndex((email) => typeof email !== 'string');
  if (notText !== -1) throw badRequest('emails', `emails[${notText}] is not a string.`);
  if (method !== undefined && !(METHOD_NAMES as readonly unknown[]).includes(method)) {
    throw badRequest('method', `method must be one of ${METHOD_NAMES.join(', ')}.`);
  }
  if (callbackUrl !== undefined && typeof callbackUrl !== 'string') {
    throw badRequest('callback_url', 'callback_url must be a string.');
  }
  const caller = await exchange.authenticate('batch', query.get('api_key'));
  const requestId = exchange.request.headers.get('idempotency-key') ?? undefined;
  const job = await exchange.service.submitBatch(
    caller,
    {
      emails: emails as string[],
      ...optional('method', method as MethodName | undefined),
      ...optional('callbackUrl', callbackUrl),
    },
    optional('requestId', requestId),
  );
  return json(202, job);
}

/** GET /v1/verify/{id}: progress, and the absolute `download_url` once completed. */
export async function batchStatusRoute(exchange: Exchange, rawId: string): Promise<Reply> {
  const query = readQuery(exchange.url, ['api_key']);
  const id = routeId(rawId);
  const caller = await exchange.authenticate('batch', query.get('api_key'));
  const status = await exchange.service.batchStatus(caller, id);
  return json(
    200,
    status.status === 'completed' ? { ...status, download_url: downloadUrl(exchange, id) } : status,
  );
}

/** Where a finished job's results are fetched: absolute, on the configured base URL. */
export function downloadUrl(exchange: Exchange, id: string): string {
  const base = exchange.config.baseUrl ?? exchange.url.origin;
  return `${base.endsWith('/') ? base.slice(0, -1) : base}/v1/verify/${encodeURIComponent(id)}/results`;
}

/**
 * GET /v1/verify/{id}/results: every record, streamed as the service yields it, in JSON, CSV or
 * NDJSON by `format=` or Accept. The first chunk is awaited before answering, so that a refusal
 * (unknown id, not completed yet) is an envelope with its status, not a broken 200.
 */
export async function batchResultsRoute(exchange: Exchange, rawId: string): Promise<Reply> {
  const query = readQuery(exchange.url, ['format', 'api_key']);
  const id = routeId(rawId);
  const format = formatOf(query.get('format'), exchange.request.headers.get('accept'));
  const caller = await exchange.authenticate('batch', query.get('api_key'));
  const chunks = await exchange.service.batchResults(caller, id, { format });
  const iterator = chunks[Symbol.asyncIterator]();
  const first = await iterator.next();
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (first.done === true) controller.close();
      else controller.enqueue(encoder.encode(first.value));
    },
    // One chunk per pull: the stream's queue holds little, a slow client slows the reading.
    async pull(controller) {
      const next = await iterator.next();
      if (next.done === true) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await iterator.return?.();
    },
  });
  const headers: Record<string, string> = {
    'content-type': chunks.contentType,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  };
  if (format === 'csv') headers['content-disposition'] = `attachment; filename="${id}.csv"`;
  return { status: 200, headers, body: first.done === true ? '' : body };
}

function formatOf(parameter: string | undefined, accept: string | null): ResultsFormat {
  if (parameter !== undefined) {
    if (!(FORMATS as readonly string[]).includes(parameter)) {
      throw badRequest('format', `format must be one of ${FORMATS.join(', ')}.`);
    }
    return parameter as ResultsFormat;
  }
  const types = (accept ?? '').toLowerCase();
  if (types.includes('text/csv')) return 'csv';
  if (types.includes('ndjson')) return 'ndjson';
  return 'json';
}
