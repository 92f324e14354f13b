/**
 * The OpenAPI 3.1 document of the /v1 API, served at GET /v1/openapi.json. It is built, not
 * written: its paths, methods and parameters come from the route table (routes.ts), and every
 * limit, enum and field list from the constant the code checks or answers by, so that the
 * document cannot say one thing while the code does another. Tests hold the handler's real
 * answers to it, and the requests they send (test/http/helpers.ts), both ways: what the server
 * accepts the document allows, and what the document forbids the server refuses.
 *
 * The schemas under components keep their names: clients generate their types from them.
 */
import { PARSE_ERROR_CODES } from '../address/errors.js';
import { RISK_FACTORS } from '../checks/checker.js';
import { METHOD_NAMES } from '../engine/methods.js';
import { STATES } from '../engine/score.js';
import { REASONS } from '../engine/verdict.js';
import {
  COMPACT_FIELDS,
  DETAILED_FIELDS,
  RESULT_RECORD_FIELDS,
  SHAPE_B_FIELDS,
  SHAPE_B_OPTIONAL,
  SHAPE_B_STATUSES,
  type DetailedField,
} from '../format/shapes.js';
import { JOB_STATUSES, WEBHOOK_STATUSES } from '../ports/batch-store.js';
import { MAX_CALLBACK_URL_LENGTH } from '../service/batch/callback-url.js';
import { RESULTS_CSV_COLUMNS } from '../service/batch/results.js';
import { PLAN_NAMES } from '../service/plans.js';
import {
  FILTER_ACTIONS,
  FILTER_TYPES,
  ID_PATTERN,
  MAX_BATCH_EMAILS,
  MAX_FILTER_PAGE,
  MAX_FILTER_REASON_LENGTH,
  MAX_FILTER_VALUE_LENGTH,
  MAX_FILTERS_PER_PAGE,
  MAX_REQUEST_ID_LENGTH,
  RESULTS_FORMATS,
  UNICODE_CONTROLS,
} from '../service/request-fields.js';
import { CONTROL_CHARACTERS, MAX_EMAIL_INPUT_LENGTH } from '../service/validate.js';
import { MAX_QUERY_LENGTH } from './query.js';
import { MAX_BODY_BYTES, MAX_JSON_DEPTH, MAX_JSON_ELEMENTS } from './request-body.js';
import {
  REQUEST_BODIES,
  ROUTES,
  type Operation,
  type OperationId,
  type QueryParameter,
  type RequestBodyName,
  type RouteName,
  type RouteSpec,
} from './routes.js';
import { MAX_SITE_SOURCE_LENGTH } from './verify-route.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` }) as const;
const response = (name: string) => ({ $ref: `#/components/responses/${name}` }) as const;
const nullable = (type: string) => ({ type: [type, 'null'] }) as const;
const snake = { type: 'string', pattern: '^[a-z][a-z0-9_]*$' } as const;
/** Text without C0 controls or DEL, which the service refuses in every text field it keeps. */
const NO_CONTROL_CHARACTERS = `^[^${CONTROL_CHARACTERS}]*$`;

const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
  'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
  'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
} as const;

const jsonBody = (schema: unknown, description: string, headers: unknown = RATE_LIMIT_HEADERS) => ({
  description,
  headers,
  content: { 'application/json': { schema } },
});

/**
 * What any request may be answered by the server before a route reads it (mailverdict/node):
 * a request too slow to arrive, or a header section too large.
 */
const CONNECTION_ERRORS = {
  '408': response('RequestTimeout'),
  '431': response('HeaderFieldsTooLarge'),
} as const;

/** The refusals every authenticated route may answer. */
const AUTHENTICATED_ERRORS = {
  ...CONNECTION_ERRORS,
  '400': response('BadRequest'),
  '401': response('Unauthorized'),
  '403': response('Forbidden'),
  '405': response('MethodNotAllowed'),
  '429': response('RateLimited'),
  '500': response('InternalError'),
} as const;

/** What a POST with a JSON body may answer besides. */
const BODY_ERRORS = {
  '413': response('PayloadTooLarge'),
  '415': response('UnsupportedMediaType'),
} as const;

/**
 * `fields=`: names of the detailed shape separated by commas, blanks around each allowed (the
 * handler trims them), an empty one skipped. Each name is followed by blanks or a comma only,
 * so the pattern has one way to match any text.
 */
const FIELDS_PATTERN = (() => {
  const name = `(?:${DETAILED_FIELDS.join('|')})`;
  return `^\\s*(?:${name}\\s*)?(?:,\\s*(?:${name}\\s*)?)*$`;
})();

/** Each query parameter as the code checks it; the route table says which operation takes it. */
const QUERY_PARAMETERS: Readonly<Record<QueryParameter, object>> = {
  email: {
    name: 'email',
    in: 'query',
    required: true,
    description:
      'Any string, UTF-8 once percent-decoded: one that is no address gets an ' +
      '`invalid_email` verdict, charged as any verdict is. Missing, repeated or not ' +
      'UTF-8 is a 400.',
    schema: { type: 'string', minLength: 1 },
  },
  method: { name: 'method', in: 'query', schema: ref('Method') },
  detailed: { name: 'detailed', in: 'query', schema: { type: 'boolean' } },
  fields: {
    name: 'fields',
    in: 'query',
    description: 'Comma-separated fields of the detailed shape; `email` is always included.',
    schema: { type: 'string', pattern: FIELDS_PATTERN },
  },
  smtp: {
    name: 'smtp',
    in: 'query',
    description: 'Form B: true (default) is the smtp method, false the standard one.',
    schema: { type: 'boolean' },
  },
  site_source: {
    name: 'site_source',
    in: 'query',
    description: 'Form B: echoed back.',
    schema: { type: 'string', maxLength: MAX_SITE_SOURCE_LENGTH, pattern: NO_CONTROL_CHARACTERS },
  },
  format: { name: 'format', in: 'query', schema: { enum: RESULTS_FORMATS } },
  filter_type: { name: 'filter_type', in: 'query', schema: ref('FilterType') },
  page: {
    name: 'page',
    in: 'query',
    schema: { type: 'integer', minimum: 1, maximum: MAX_FILTER_PAGE },
  },
  per_page: {
    name: 'per_page',
    in: 'query',
    schema: { type: 'integer', minimum: 1, maximum: MAX_FILTERS_PER_PAGE },
  },
  api_key: { $ref: '#/components/parameters/api_key' },
};

/** What an operation does and answers; its parameters and body come from the route table. */
interface OperationDoc {
  readonly summary: string;
  readonly description?: string;
  readonly security?: readonly unknown[];
  readonly responses: Readonly<Record<string, unknown>>;
}

const OPERATIONS: Readonly<Record<OperationId, OperationDoc>> = {
  verify: {
    summary: 'Verify one address',
    description:
      'Shape A (`method`, `detailed`, `fields`) unless a form B parameter (`smtp`, ' +
      '`site_source`) is present, then shape B. Public keys may call this from a browser ' +
      'page on one of their trusted domains (CORS).',
    responses: {
      '200': jsonBody(
        {
          anyOf: [
            ref('CompactResult'),
            ref('DetailedResult'),
            ref('SelectedResult'),
            ref('ShapeBResult'),
          ],
        },
        'The verdict.',
      ),
      ...AUTHENTICATED_ERRORS,
      '402': response('InsufficientCredits'),
      '409': response('Conflict'),
    },
  },
  submitBatch: {
    summary: 'Submit a batch of addresses',
    responses: {
      '202': jsonBody(ref('BatchSubmitted'), 'The job was accepted.'),
      ...AUTHENTICATED_ERRORS,
      '402': response('InsufficientCredits'),
      '409': response('Conflict'),
      ...BODY_ERRORS,
    },
  },
  batchStatus: {
    summary: "A batch job's progress",
    responses: {
      '200': jsonBody(ref('BatchStatus'), 'The job.'),
      ...AUTHENTICATED_ERRORS,
      '404': response('NotFound'),
    },
  },
  redeliverWebhook: {
    summary: "Deliver a finished batch's webhook again",
    description:
      'Queues the completion webhook again, due now, for a new round of attempts (the ' +
      'schedule starts over), with the same `webhook-id`: a receiver that has it may drop ' +
      "it. Answers the job's status, its `webhook` pending. A job submitted without a " +
      '`callback_url` is a 409 `conflict`; one still processing a 409 `batch_not_completed`.',
    responses: {
      '202': jsonBody(ref('BatchStatus'), 'The webhook is queued.'),
      ...AUTHENTICATED_ERRORS,
      '404': response('NotFound'),
      '409': jsonBody(
        { anyOf: [ref('BatchNotCompletedError'), ref('Error')] },
        'conflict: the job has no callback_url; batch_not_completed: it is still processing.',
      ),
    },
  },
  batchResults: {
    summary: "A completed batch's results, streamed",
    description:
      'Every record in input order, each `input` (the address as submitted), the detailed ' +
      'shape, `risk_factors` and `error` (plus `duplicate: true` where the address repeats an ' +
      'earlier one). JSON by default; CSV (columns ' +
      `${RESULTS_CSV_COLUMNS.join(', ')}) or NDJSON by \`format=\` or Accept.`,
    responses: {
      '200': {
        description: 'The records.',
        headers: RATE_LIMIT_HEADERS,
        content: {
          'application/json': { schema: ref('BatchResults') },
          'text/csv': { schema: { type: 'string' } },
          'application/x-ndjson': { schema: { type: 'string' } },
        },
      },
      ...AUTHENTICATED_ERRORS,
      '404': response('NotFound'),
      '409': response('BatchNotCompleted'),
    },
  },
  listFilters: {
    summary: "The account's filters, paged, in a stable order",
    responses: {
      '200': jsonBody(ref('FilterList'), 'A page of filters.'),
      ...AUTHENTICATED_ERRORS,
    },
  },
  createFilter: {
    summary: 'Add a block or allow filter',
    responses: {
      '201': jsonBody(ref('Filter'), 'The filter.'),
      ...AUTHENTICATED_ERRORS,
      '409': response('Conflict'),
      ...BODY_ERRORS,
    },
  },
  deleteFilter: {
    summary: 'Remove a filter',
    responses: {
      '200': jsonBody(ref('Deleted'), 'The filter is gone.'),
      ...AUTHENTICATED_ERRORS,
      '404': response('NotFound'),
    },
  },
  account: {
    summary: 'Plan, credits, rate limit and billing period',
    responses: {
      '200': jsonBody(ref('Account'), 'The account.'),
      ...AUTHENTICATED_ERRORS,
    },
  },
  openapi: {
    summary: 'This document',
    security: [],
    responses: {
      '200': {
        description: 'The OpenAPI document.',
        content: { 'application/json': { schema: { type: 'object' } } },
      },
      '405': response('MethodNotAllowed'),
      ...CONNECTION_ERRORS,
    },
  },
};

/** Methods a path item has beyond the table's: the CORS preflight public keys' pages send. */
const EXTRA_METHODS: Readonly<Partial<Record<RouteName, Record<string, object>>>> = {
  verify: {
    options: {
      operationId: 'verifyPreflight',
      summary: 'CORS preflight for GET /v1/verify',
      security: [],
      responses: { '204': { description: 'The methods and headers a page may use.' } },
    },
  },
};

/** One operation of the table, documented: path id, query parameters, header, body. */
function operationOf(path: string, operation: Operation): Record<string, unknown> {
  const { summary, description, security, responses } = OPERATIONS[
    operation.operationId as OperationId
  ] as OperationDoc;
  const parameters: unknown[] = [];
  if (path.includes('{id}')) parameters.push({ $ref: '#/components/parameters/id' });
  for (const name of operation.query ?? []) parameters.push(QUERY_PARAMETERS[name]);
  if (operation.idempotencyKey === true) {
    parameters.push({ $ref: '#/components/parameters/Idempotency-Key' });
  }
  return {
    operationId: operation.operationId,
    summary,
    ...(description === undefined ? {} : { description }),
    ...(parameters.length === 0 ? {} : { parameters }),
    ...(security === undefined ? {} : { security }),
    ...(operation.body === undefined
      ? {}
      : {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: ref(operation.body) } },
          },
        }),
    responses,
  };
}

/**
 * A path item with HEAD beside its GET (RFC 9110 9.3.2: the GET's status and headers, no
 * content), as the handler answers it.
 */
function withHead(item: Record<string, unknown>): Record<string, unknown> {
  const get = item.get as Record<string, unknown> | undefined;
  if (get === undefined) return item;
  const { operationId, summary, parameters, security, responses } = get;
  return {
    ...item,
    head: {
      operationId: `${String(operationId)}Head`,
      summary: `${String(summary)}: headers only`,
      description: 'The answer GET would give (status and headers), without its content.',
      ...(parameters === undefined ? {} : { parameters }),
      ...(security === undefined ? {} : { security }),
      responses: Object.fromEntries(
        Object.keys(responses as object).map((status) => [
          status,
          { description: `As GET's ${status}, without content.` },
        ]),
      ),
    },
  };
}

function pathsOf(): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const [name, route] of Object.entries(ROUTES) as [RouteName, RouteSpec][]) {
    const item: Record<string, unknown> = {};
    for (const [method, operation] of Object.entries(route.operations)) {
      item[method.toLowerCase()] = operationOf(route.path, operation);
    }
    paths[route.path] = withHead({ ...item, ...EXTRA_METHODS[name] });
  }
  return paths;
}

/** Every field of the detailed shape (null when its check did not run). */
const DETAILED_PROPERTIES: Readonly<Record<DetailedField, object>> = {
  email: { type: 'string' },
  state: ref('State'),
  score: { type: 'integer', minimum: 0, maximum: 100 },
  reason: ref('Reason'),
  domain: nullable('string'),
  user: nullable('string'),
  mx_record: nullable('string'),
  smtp_provider: nullable('string'),
  disposable: nullable('boolean'),
  role: nullable('boolean'),
  free: nullable('boolean'),
  catch_all: nullable('boolean'),
  mailbox_full: nullable('boolean'),
  no_reply: nullable('boolean'),
  did_you_mean: nullable('string'),
  duration: { type: 'number', minimum: 0, description: 'Seconds the verification took.' },
};

/** The properties of `fields`, in their order, from a table of them all. */
function pick<F extends string>(
  fields: readonly F[],
  all: Readonly<Record<F, object>>,
): Record<string, object> {
  return Object.fromEntries(fields.map((field) => [field, all[field]]));
}

/** The JSON bodies of the route table, each field as the service checks it. */
const REQUEST_BODY_FIELDS: {
  readonly [B in RequestBodyName]: Readonly<Record<(typeof REQUEST_BODIES)[B][number], object>>;
} = {
  BatchRequest: {
    emails: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_BATCH_EMAILS,
      items: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_EMAIL_INPUT_LENGTH,
        pattern: `^[^${UNICODE_CONTROLS}]*$`,
      },
    },
    method: ref('Method'),
    callback_url: {
      type: ['string', 'null'],
      format: 'uri',
      maxLength: MAX_CALLBACK_URL_LENGTH,
      description:
        'Where the completion webhook goes: https (http only where the server allows it), ' +
        'to a public address. Null or absent: no webhook.',
    },
  },
  NewFilter: {
    value: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_FILTER_VALUE_LENGTH,
      pattern: NO_CONTROL_CHARACTERS,
    },
    filter_type: ref('FilterType'),
    action: ref('FilterAction'),
    reason: {
      type: ['string', 'null'],
      minLength: 1,
      maxLength: MAX_FILTER_REASON_LENGTH,
      pattern: NO_CONTROL_CHARACTERS,
    },
  },
};

/** Which fields of each body must be there. */
const REQUIRED_FIELDS: { readonly [B in RequestBodyName]: readonly string[] } = {
  BatchRequest: ['emails'],
  NewFilter: ['value', 'filter_type', 'action'],
};

function requestBodySchemas(): Record<string, object> {
  return Object.fromEntries(
    (Object.keys(REQUEST_BODIES) as RequestBodyName[]).map((name) => [
      name,
      {
        type: 'object',
        additionalProperties: false,
        required: REQUIRED_FIELDS[name],
        properties: pick<string>(
          REQUEST_BODIES[name],
          REQUEST_BODY_FIELDS[name] as Record<string, object>,
        ),
      },
    ]),
  );
}

const SHAPE_B_PROPERTIES = {
  email: { type: 'string' },
  status: { enum: SHAPE_B_STATUSES },
  score: DETAILED_PROPERTIES.score,
  deliverability: ref('State'),
  disposable: nullable('boolean'),
  role: nullable('boolean'),
  free: nullable('boolean'),
  catch_all: nullable('boolean'),
  risk_factors: { type: 'array', items: ref('RiskFactor') },
  site_source: { type: 'string' },
  did_you_mean: nullable('string'),
  duration: DETAILED_PROPERTIES.duration,
} as const;

const count = { type: 'integer', minimum: 0 } as const;
const percent = { type: 'number', minimum: 0, maximum: 100 } as const;

export const OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: {
    title: 'mailverdict Email Validation API',
    version: '1.0.0',
    description:
      'Verify email addresses one at a time or in batches, with API keys, plans and rate ' +
      'limits, a credits ledger and block/allow filters. Every error is the JSON envelope ' +
      '`{error, message, ...context}`; every answer to an identified key carries ' +
      'X-RateLimit-Limit (per minute), X-RateLimit-Remaining and X-RateLimit-Reset (Unix ' +
      `seconds). A query string is at most ${MAX_QUERY_LENGTH} characters and takes only ` +
      'the parameters listed, each once. A JSON body is read only once its key is admitted ' +
      `(a refusal comes first); by default it is at most ${MAX_BODY_BYTES} bytes, nests at ` +
      `most ${MAX_JSON_DEPTH} levels, holds at most ${MAX_JSON_ELEMENTS} elements, and takes ` +
      'only the fields listed.',
    license: { name: 'MIT', identifier: 'MIT' },
  },
  jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
  security: [{ bearer: [] }, { apiKey: [] }],
  paths: pathsOf(),
  components: {
    securitySchemes: {
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description: 'mv_sk_… (private) or mv_pk_… (public)',
      },
      apiKey: { type: 'apiKey', in: 'query', name: 'api_key' },
    },
    parameters: {
      api_key: {
        name: 'api_key',
        in: 'query',
        description:
          'The key, when not sent as a bearer header (both must agree if both are sent).',
        schema: { type: 'string' },
      },
      id: {
        name: 'id',
        in: 'path',
        required: true,
        schema: { type: 'string', pattern: ID_PATTERN },
      },
      'Idempotency-Key': {
        name: 'Idempotency-Key',
        in: 'header',
        description:
          'Within 24 hours the same key with the same request answers the first answer again; ' +
          'with another request it is a 409 idempotency_conflict.',
        schema: {
          type: 'string',
          minLength: 1,
          maxLength: MAX_REQUEST_ID_LENGTH,
          pattern: NO_CONTROL_CHARACTERS,
        },
      },
    },
    headers: {
      'X-RateLimit-Limit': {
        description: "Requests a minute the key's plan allows.",
        schema: { type: 'integer' },
      },
      'X-RateLimit-Remaining': {
        description: 'Requests left in the window.',
        schema: { type: 'integer' },
      },
      'X-RateLimit-Reset': {
        description: 'When the window resets, in Unix seconds.',
        schema: { type: 'integer' },
      },
      'Retry-After': {
        description: 'Seconds to wait before retrying.',
        schema: { type: 'integer' },
      },
    },
    responses: {
      BadRequest: jsonBody(
        ref('Error'),
        'invalid_request: what was wrong, and which parameter (`field`).',
      ),
      Unauthorized: jsonBody(
        ref('Error'),
        'unauthorized: no key, or an unknown, revoked or expired one.',
        {
          'WWW-Authenticate': {
            description: 'The challenge: `Bearer realm="mailverdict"`.',
            schema: { type: 'string' },
          },
        },
      ),
      InsufficientCredits: jsonBody(ref('InsufficientCreditsError'), 'insufficient_credits.'),
      Forbidden: jsonBody(
        ref('Error'),
        'forbidden: an IP address off the allow-list, an untrusted page, or a public key on a private route.',
      ),
      NotFound: jsonBody(ref('Error'), 'not_found.'),
      MethodNotAllowed: {
        description: 'method_not_allowed; Allow lists the methods the route takes.',
        headers: { Allow: { schema: { type: 'string' } }, ...RATE_LIMIT_HEADERS },
        content: { 'application/json': { schema: ref('Error') } },
      },
      Conflict: jsonBody(ref('Error'), 'conflict, idempotency_conflict or request_in_progress.'),
      BatchNotCompleted: jsonBody(
        ref('BatchNotCompletedError'),
        'batch_not_completed, with the progress.',
      ),
      PayloadTooLarge: jsonBody(ref('Error'), 'payload_too_large.'),
      RequestTimeout: jsonBody(
        ref('Error'),
        'request_timeout: the request line and headers, or the whole request, did not arrive in time.',
        {},
      ),
      HeaderFieldsTooLarge: jsonBody(
        ref('Error'),
        'request_header_fields_too_large: more header fields than the server takes, or a request line and headers too large.',
        {},
      ),
      UnsupportedMediaType: jsonBody(
        ref('Error'),
        'unsupported_media_type: the body must be JSON.',
      ),
      RateLimited: {
        description: 'rate_limit_exceeded.',
        headers: {
          ...RATE_LIMIT_HEADERS,
          'Retry-After': { $ref: '#/components/headers/Retry-After' },
        },
        content: { 'application/json': { schema: ref('RateLimitError') } },
      },
      InternalError: jsonBody(ref('Error'), 'internal_error: nothing about our internals.'),
    },
    schemas: {
      Error: {
        type: 'object',
        required: ['error', 'message'],
        properties: {
          error: snake,
          message: { type: 'string' },
          field: { type: 'string' },
          allowed: { type: 'array', items: { type: 'string' } },
        },
      },
      RateLimitError: {
        type: 'object',
        required: ['error', 'message', 'retry_after'],
        properties: {
          error: { const: 'rate_limit_exceeded' },
          message: { type: 'string' },
          retry_after: { type: 'integer', minimum: 1 },
        },
      },
      InsufficientCreditsError: {
        type: 'object',
        required: ['error', 'message', 'needed', 'available'],
        properties: {
          error: { const: 'insufficient_credits' },
          message: { type: 'string' },
          needed: count,
          available: count,
        },
      },
      Method: { enum: METHOD_NAMES },
      State: { enum: STATES },
      Reason: { enum: REASONS },
      RiskFactor: { enum: RISK_FACTORS },
      CompactResult: {
        type: 'object',
        additionalProperties: false,
        required: COMPACT_FIELDS,
        properties: pick(COMPACT_FIELDS, DETAILED_PROPERTIES),
      },
      DetailedResult: {
        type: 'object',
        additionalProperties: false,
        required: DETAILED_FIELDS,
        properties: DETAILED_PROPERTIES,
      },
      SelectedResult: {
        type: 'object',
        description: 'The detailed shape cut down to `fields`.',
        additionalProperties: false,
        required: ['email'],
        properties: DETAILED_PROPERTIES,
      },
      ShapeBResult: {
        type: 'object',
        additionalProperties: false,
        required: SHAPE_B_FIELDS.filter((field) => !SHAPE_B_OPTIONAL.includes(field)),
        properties: pick(SHAPE_B_FIELDS, SHAPE_B_PROPERTIES),
      },
      ...requestBodySchemas(),
      BatchSubmitted: {
        type: 'object',
        required: ['id', 'status', 'total_emails', 'message'],
        properties: {
          id: { type: 'string' },
          status: { const: 'processing' },
          total_emails: { type: 'integer', minimum: 1, maximum: MAX_BATCH_EMAILS },
          message: { type: 'string' },
        },
      },
      JobStatus: { enum: JOB_STATUSES },
      BatchStatus: {
        type: 'object',
        required: [
          'id',
          'status',
          'total_emails',
          'processed',
          'percent_complete',
          'valid',
          'invalid',
          'risky',
        ],
        properties: {
          id: { type: 'string' },
          status: ref('JobStatus'),
          total_emails: count,
          processed: count,
          percent_complete: percent,
          valid: count,
          invalid: count,
          risky: count,
          download_url: {
            type: 'string',
            format: 'uri-reference',
            description:
              "Once completed. Absolute, on the server's configured base URL (the address " +
              'it listens on by default); a path (`/v1/verify/{id}/results`) when the host ' +
              'mounting the API configured none.',
          },
          reason: { type: 'string', description: 'Why a failed job failed.' },
          webhook: {
            type: 'object',
            description:
              'With a callback_url: where the delivery of its webhook stands (pending, with ' +
              'nothing tried, while the job processes).',
            additionalProperties: false,
            required: ['status', 'attempts', 'last_status', 'last_error', 'next_attempt_at'],
            properties: {
              status: { enum: WEBHOOK_STATUSES },
              attempts: { ...count, description: 'Attempts since it was queued, or queued again.' },
              last_status: {
                type: ['integer', 'null'],
                // Any three digits: Node reads whatever status line a receiver sends (RFC 9110
                // 15 defines 100-599, but a receiver may answer 799).
                minimum: 100,
                maximum: 999,
                description: 'The HTTP status the last attempt was answered with.',
              },
              last_error: {
                type: ['string', 'null'],
                description: 'Why the last attempt was not a delivery; null after a delivery.',
              },
              next_attempt_at: {
                type: ['string', 'null'],
                format: 'date-time',
                description: 'When a pending webhook is tried next; null once delivered or failed.',
              },
            },
          },
        },
      },
      BatchResults: {
        type: 'object',
        required: ['id', 'total_emails', 'results'],
        properties: {
          id: { type: 'string' },
          total_emails: { type: 'integer', minimum: 1 },
          results: { type: 'array', items: ref('BatchRecord') },
        },
      },
      BatchNotCompletedError: {
        type: 'object',
        required: [
          'error',
          'message',
          'id',
          'status',
          'total_emails',
          'processed',
          'percent_complete',
        ],
        properties: {
          error: { const: 'batch_not_completed' },
          message: { type: 'string' },
          id: { type: 'string' },
          status: { enum: JOB_STATUSES.filter((status) => status !== 'completed') },
          total_emails: { type: 'integer', minimum: 1 },
          processed: count,
          percent_complete: percent,
        },
      },
      BatchRecord: {
        type: 'object',
        required: ['input', ...DETAILED_FIELDS, ...RESULT_RECORD_FIELDS],
        properties: {
          input: { description: 'The address as submitted.', type: 'string' },
          ...DETAILED_PROPERTIES,
          risk_factors: SHAPE_B_PROPERTIES.risk_factors,
          error: {
            description: 'Why the syntax check failed, else null.',
            type: ['object', 'null'],
            additionalProperties: false,
            required: ['code', 'message'],
            properties: { code: { enum: PARSE_ERROR_CODES }, message: { type: 'string' } },
          },
          duplicate: { type: 'boolean' },
        },
      },
      FilterType: { enum: FILTER_TYPES },
      FilterAction: { enum: FILTER_ACTIONS },
      Filter: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'filter_type', 'value', 'action', 'reason', 'created_at'],
        properties: {
          id: { type: 'string' },
          filter_type: ref('FilterType'),
          value: { type: 'string' },
          action: ref('FilterAction'),
          reason: nullable('string'),
          created_at: { type: 'string', format: 'date-time' },
        },
      },
      FilterList: {
        type: 'object',
        additionalProperties: false,
        required: ['filters', 'total', 'page', 'per_page'],
        properties: {
          filters: { type: 'array', items: ref('Filter') },
          total: count,
          page: { type: 'integer', minimum: 1, maximum: MAX_FILTER_PAGE },
          per_page: { type: 'integer', minimum: 1, maximum: MAX_FILTERS_PER_PAGE },
        },
      },
      Deleted: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'deleted'],
        properties: { id: { type: 'string' }, deleted: { const: true } },
      },
      Account: {
        type: 'object',
        additionalProperties: false,
        required: ['email', 'plan', 'credits', 'rate_limit', 'billing_period'],
        properties: {
          email: { type: 'string' },
          plan: { enum: PLAN_NAMES },
          credits: {
            type: 'object',
            additionalProperties: false,
            required: ['available', 'reserved', 'used', 'total'],
            properties: { available: count, reserved: count, used: count, total: count },
          },
          rate_limit: {
            type: 'object',
            additionalProperties: false,
            required: ['per_minute', 'remaining'],
            properties: {
              per_minute: { type: 'integer', minimum: 1 },
              remaining: count,
            },
          },
          billing_period: {
            type: 'object',
            additionalProperties: false,
            required: ['start', 'end'],
            properties: {
              start: { type: 'string', format: 'date' },
              end: { type: 'string', format: 'date' },
            },
          },
        },
      },
    },
  },
} as const;
