import { optional } from '../optional.js';
import { RESULTS_FORMATS, resultsFormatOf } from '../service/request-fields.js';
import type { NewBatch, ResultsFormat } from '../service/service.js';
import type { Exchange } from './exchange.js';
import { idempotencyKey, namingIdempotencyKey } from './idempotency-key.js';
import { json, type Reply } from './responses.js';
import { routeId } from './route-id.js';
import { REQUEST_BODIES } from './routes.js';

/** POST /v1/verify `{emails, method?, callback_url?}` -> 202 with the job. */
export async function submitBatchRoute(exchange: Exchange): Promise<Reply> {
  const requestId = idempotencyKey(exchange.request);
  const caller = await exchange.authenticate('batch', exchange.query.get('api_key'));
  const body = await exchange.jsonBody(REQUEST_BODIES.BatchRequest);
  // The wire's fields as they came: the service checks each (request-fields.ts), so that a
  // refusal reads the same over HTTP as in the library.
  // The job keeps the base URL its download_url is built on, chosen by the service's rule.
  const { baseUrl, defaultBaseUrl } = exchange.config;
  const options = {
    ...optional('requestId', requestId),
    ...optional('baseUrl', baseUrl),
    ...optional('defaultBaseUrl', defaultBaseUrl),
  };
  const job = await namingIdempotencyKey(() =>
    exchange.service.submitBatch(caller, body as unknown as NewBatch, options),
  );
  return json(202, job);
}

/**
 * GET /v1/verify/{id}: progress, and `download_url` once completed, as the service builds it
 * (its webhook says the same) on the base URL kept with the job; never on this request's Host.
 */
export async function batchStatusRoute(exchange: Exchange, rawId: string): Promise<Reply> {
  const id = routeId(rawId);
  const caller = await exchange.authenticate('batch', exchange.query.get('api_key'));
  const status = await exchange.service.batchStatus(caller, id, baseUrlChoice(exchange));
  return json(200, status);
}

/**
 * POST /v1/verify/{id}/webhook: the finished job's webhook queued again for delivery -> 202
 * with the job's status, its `webhook` pending.
 */
export async function redeliverWebhookRoute(exchange: Exchange, rawId: string): Promise<Reply> {
  const id = routeId(rawId);
  const caller = await exchange.authenticate('batch', exchange.query.get('api_key'));
  const status = await exchange.service.redeliverWebhook(caller, id, baseUrlChoice(exchange));
  return json(202, status);
}

/** A job stored before bases were kept with jobs is read as if submitted here now. */
function baseUrlChoice(exchange: Exchange) {
  const { baseUrl, defaultBaseUrl } = exchange.config;
  return { ...optional('baseUrl', baseUrl), ...optional('defaultBaseUrl', defaultBaseUrl) };
}

/**
 * GET /v1/verify/{id}/results: every record, streamed as the service yields it, in JSON, CSV or
 * NDJSON by `format=` or Accept. The first chunk is awaited before answering, so that a refusal
 * (unknown id, not completed yet) is an envelope with its status, not a broken 200.
 */
export async function batchResultsRoute(exchange: Exchange, rawId: string): Promise<Reply> {
  const { query } = exchange;
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
  if (parameter !== undefined) return resultsFormatOf(parameter);
  return accept === null ? 'json' : negotiate(accept);
}

/** The media types each format answers to, the first its own. */
const FORMAT_TYPES: Readonly<Record<ResultsFormat, readonly string[]>> = {
  json: ['application/json'],
  csv: ['text/csv'],
  ndjson: ['application/x-ndjson', 'application/ndjson'],
};

/** How a format fares against an Accept header: its weight, how specifically named, where. */
interface Preference {
  readonly q: number;
  readonly specificity: number;
  readonly index: number;
}

/**
 * The format an Accept header prefers (RFC 9110 12.5.1): the highest `q`; between equals, a
 * type named outright before a `text/` wildcard before the full wildcard, then the order the
 * client listed them, then JSON, CSV, NDJSON. `q=0` refuses a type. A client that accepts none
 * of ours still gets JSON, the documented default, rather than a 406 the document never lists.
 */
function negotiate(accept: string): ResultsFormat {
  // Each format weighed by the most specific range that names it.
  const preferences = new Map<ResultsFormat, Preference>();
  accept
    .toLowerCase()
    .split(',')
    .slice(0, 32)
    .forEach((range, index) => {
      const [type = '', ...parameters] = range.split(';').map((part) => part.trim());
      let q = 1;
      for (const parameter of parameters) {
        const [name, value = ''] = parameter.split('=').map((part) => part.trim());
        if (name === 'q') q = Q_VALUE.test(value) ? Number(value) : 0;
      }
      for (const format of RESULTS_FORMATS) {
        const specificity = covers(type, FORMAT_TYPES[format]);
        const held = preferences.get(format);
        if (specificity > (held?.specificity ?? 0)) {
          preferences.set(format, { q, specificity, index });
        }
      }
    });
  let best: [ResultsFormat, Preference] | undefined;
  for (const entry of preferences) {
    if (entry[1].q > 0 && (best === undefined || preferred(entry[1], best[1]))) best = entry;
  }
  return best?.[0] ?? 'json';
}

/** RFC 9110 12.4.2: a weight is 0 to 1 with at most three decimals; anything else refuses. */
const Q_VALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;

function preferred(a: Preference, b: Preference): boolean {
  if (a.q !== b.q) return a.q > b.q;
  if (a.specificity !== b.specificity) return a.specificity > b.specificity;
  return a.index < b.index;
}

/** How specifically a media range names one of `types`: 3 outright, 2 by its type, 1 any, 0 not. */
function covers(range: string, types: readonly string[]): number {
  if (types.includes(range)) return 3;
  if (range === '*/*') return 1;
  return range.endsWith('/*') && types.some((type) => type.startsWith(range.slice(0, -1))) ? 2 : 0;
}
