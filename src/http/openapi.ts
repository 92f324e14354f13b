/**
 * The OpenAPI 3.1 document of the /v1 API (DESIGN 7), served at GET /v1/openapi.json and
 * tested against the handler's real answers (test/http/openapi.test.ts): every status a route
 * can answer is listed under it, each body with its schema (JSON Schema 2020-12).
 */
import { DETAILED_FIELDS } from '../format/shapes.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` }) as const;
const response = (name: string) => ({ $ref: `#/components/responses/${name}` }) as const;
const nullable = (type: string) => ({ type: [type, 'null'] }) as const;
const snake = { type: 'string', pattern: '^[a-z][a-z0-9_]*$' } as const;

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

/** The refusals every authenticated route may answer. */
const AUTHENTICATED_ERRORS = {
  '400': response('BadRequest'),
  '401': response('Unauthorized'),
  '403': response('Forbidden'),
  '405': response('MethodNotAllowed'),
  '429': response('RateLimited'),
  '500': response('InternalError'),
} as const;

const apiKeyParameter = { $ref: '#/components/parameters/api_key' } as const;
const idPath = { $ref: '#/components/parameters/id' } as const;

const DETAILED_PROPERTIES = {
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
} as const;

/** Every field of the detailed shape is always present (null when its check did not run). */
const DETAILED_REQUIRED = DETAILED_FIELDS;

/** An operation as withHead reads it. */
interface GetOperation {
  readonly operationId: string;
  readonly summary: string;
  readonly parameters?: readonly unknown[];
  readonly security?: readonly unknown[];
  readonly responses: Readonly<Record<string, unknown>>;
}

/**
 * A path item with HEAD beside its GET (RFC 9110 9.3.2: the GET's status and headers, no
 * content), as the handler answers it.
 */
function withHead<T extends { readonly get: GetOperation }>(item: T): T & { head: object } {
  const { operationId, summary, parameters, security, responses } = item.get;
  return {
    ...item,
    head: {
      operationId: `${operationId}Head`,
      summary: `${summary}: headers only`,
      description: 'The answer GET would give (status and headers), without its content.',
      ...(parameters === undefined ? {} : { parameters }),
      ...(security === undefined ? {} : { security }),
      responses: Object.fromEntries(
        Object.keys(responses).map((status) => [
          status,
          { description: `As GET's ${status}, without content.` },
        ]),
      ),
    },
  };
}

export const OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: {
    title: 'mailverdict Email Validation API',
    version: '1.0.0',
    description:
      'Verify email addresses one at a time or in batches, with API keys, plans and rate ' +
      'limits, a credits ledger and block/allow filters. Every error is the JSON envelope ' +
      '`{error, message, ...context}`; every answer to an identified key carries ' +
      'X-RateLimit-Limit (per minute), X-RateLimit-Remaining and X-RateLimit-Reset (Unix seconds).',
    license: { name: 'MIT', identifier: 'MIT' },
  },
  jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
  security: [{ bearer: [] }, { apiKey: [] }],
  paths: {
    '/v1/verify': withHead({
      get: {
        operationId: 'verify',
        summary: 'Verify one address',
        description:
          'Shape A (`method`, `detailed`, `fields`) unless a form B parameter (`smtp`, ' +
          '`site_source`) is present, then shape B. Public keys may call this from a browser ' +
          'page on one of their trusted domains (CORS).',
        parameters: [
          {
            name: 'email',
            in: 'query',
            required: true,
            description:
              'Any string, UTF-8 once percent-decoded: one that is no address gets an ' +
              '`invalid_email` verdict, charged as any verdict is. Missing, repeated or not ' +
              'UTF-8 is a 400.',
            schema: { type: 'string', minLength: 1 },
          },
          { name: 'method', in: 'query', schema: ref('Method') },
          { name: 'detailed', in: 'query', schema: { type: 'boolean' } },
          {
            name: 'fields',
            in: 'query',
            description:
              'Comma-separated fields of the detailed shape; `email` is always included.',
            schema: { type: 'string' },
          },
          {
            name: 'smtp',
            in: 'query',
            description: 'Form B: true (default) is the smtp method, false the standard one.',
            schema: { type: 'boolean' },
          },
          {
            name: 'site_source',
            in: 'query',
            description: 'Form B: echoed back.',
            schema: { type: 'string', maxLength: 500 },
          },
          apiKeyParameter,
          { $ref: '#/components/parameters/Idempotency-Key' },
        ],
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
      post: {
        operationId: 'submitBatch',
        summary: 'Submit a batch of addresses',
        parameters: [apiKeyParameter, { $ref: '#/components/parameters/Idempotency-Key' }],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: ref('BatchRequest') } },
        },
        responses: {
          '202': jsonBody(ref('BatchSubmitted'), 'The job was accepted.'),
          ...AUTHENTICATED_ERRORS,
          '402': response('InsufficientCredits'),
          '409': response('Conflict'),
          '413': response('PayloadTooLarge'),
          '415': response('UnsupportedMediaType'),
        },
      },
      options: {
        operationId: 'verifyPreflight',
        summary: 'CORS preflight for GET /v1/verify',
        security: [],
        responses: { '204': { description: 'The methods and headers a page may use.' } },
      },
    }),
    '/v1/verify/{id}': withHead({
      get: {
        operationId: 'batchStatus',
        summary: "A batch job's progress",
        parameters: [idPath, apiKeyParameter],
        responses: {
          '200': jsonBody(ref('BatchStatus'), 'The job.'),
          ...AUTHENTICATED_ERRORS,
          '404': response('NotFound'),
        },
      },
    }),
    '/v1/verify/{id}/results': withHead({
      get: {
        operationId: 'batchResults',
        summary: "A completed batch's results, streamed",
        description:
          'Every record in input order, each the detailed shape (plus `duplicate: true` where ' +
          'the address repeats an earlier one). JSON by default; CSV or NDJSON by `format=` or Accept.',
        parameters: [
          idPath,
          { name: 'format', in: 'query', schema: { enum: ['json', 'csv', 'ndjson'] } },
          apiKeyParameter,
        ],
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
    }),
    '/v1/filters': withHead({
      get: {
        operationId: 'listFilters',
        summary: "The account's filters, paged, in a stable order",
        parameters: [
          { name: 'filter_type', in: 'query', schema: ref('FilterType') },
          {
            name: 'page',
            in: 'query',
            schema: { type: 'integer', minimum: 1, maximum: 1_000_000 },
          },
          { name: 'per_page', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100 } },
          apiKeyParameter,
        ],
        responses: {
          '200': jsonBody(ref('FilterList'), 'A page of filters.'),
          ...AUTHENTICATED_ERRORS,
        },
      },
      post: {
        operationId: 'createFilter',
        summary: 'Add a block or allow filter',
        parameters: [apiKeyParameter],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: ref('NewFilter') } },
        },
        responses: {
          '201': jsonBody(ref('Filter'), 'The filter.'),
          ...AUTHENTICATED_ERRORS,
          '409': response('Conflict'),
          '413': response('PayloadTooLarge'),
          '415': response('UnsupportedMediaType'),
        },
      },
    }),
    '/v1/filters/{id}': {
      delete: {
        operationId: 'deleteFilter',
        summary: 'Remove a filter',
        parameters: [idPath, apiKeyParameter],
        responses: {
          '200': jsonBody(ref('Deleted'), 'The filter is gone.'),
          ...AUTHENTICATED_ERRORS,
          '404': response('NotFound'),
        },
      },
    },
    '/v1/account': withHead({
      get: {
        operationId: 'account',
        summary: 'Plan, credits, rate limit and billing period',
        parameters: [apiKeyParameter],
        responses: {
          '200': jsonBody(ref('Account'), 'The account.'),
          ...AUTHENTICATED_ERRORS,
        },
      },
    }),
    '/v1/openapi.json': withHead({
      get: {
        operationId: 'openapi',
        summary: 'This document',
        security: [],
        responses: {
          '200': {
            description: 'The OpenAPI document.',
            content: { 'application/json': { schema: { type: 'object' } } },
          },
          '405': response('MethodNotAllowed'),
        },
      },
    }),
  },
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
        schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,100}$' },
      },
      'Idempotency-Key': {
        name: 'Idempotency-Key',
        in: 'header',
        description:
          'Within 24 hours the same key with the same request answers the first answer again; ' +
          'with another request it is a 409 idempotency_conflict.',
        schema: { type: 'string', minLength: 1, maxLength: 255 },
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
          needed: { type: 'integer', minimum: 0 },
          available: { type: 'integer', minimum: 0 },
        },
      },
      Method: { enum: ['quick', 'standard', 'smtp'] },
      State: { enum: ['deliverable', 'undeliverable', 'risky'] },
      Reason: {
        ...snake,
        description:
          'accepted_email, rejected_email, invalid_email, invalid_domain, invalid_smtp, ' +
          'low_quality, low_deliverability, no_connect, timeout, unavailable_smtp, ' +
          'unexpected_error, blocked_by_filter, allowed_by_filter',
      },
      CompactResult: {
        type: 'object',
        additionalProperties: false,
        required: ['email', 'state', 'score', 'reason'],
        properties: {
          email: DETAILED_PROPERTIES.email,
          state: DETAILED_PROPERTIES.state,
          score: DETAILED_PROPERTIES.score,
          reason: DETAILED_PROPERTIES.reason,
        },
      },
      DetailedResult: {
        type: 'object',
        additionalProperties: false,
        required: DETAILED_REQUIRED,
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
        required: [
          'email',
          'status',
          'score',
          'deliverability',
          'disposable',
          'role',
          'free',
          'catch_all',
          'risk_factors',
          'did_you_mean',
          'duration',
        ],
        properties: {
          email: { type: 'string' },
          status: { enum: ['valid', 'invalid'] },
          score: DETAILED_PROPERTIES.score,
          deliverability: ref('State'),
          disposable: nullable('boolean'),
          role: nullable('boolean'),
          free: nullable('boolean'),
          catch_all: nullable('boolean'),
          risk_factors: { type: 'array', items: snake },
          site_source: { type: 'string' },
          did_you_mean: nullable('string'),
          duration: DETAILED_PROPERTIES.duration,
        },
      },
      BatchRequest: {
        type: 'object',
        additionalProperties: false,
        required: ['emails'],
        properties: {
          emails: {
            type: 'array',
            minItems: 1,
            maxItems: 50_000,
            items: { type: 'string', minLength: 1, maxLength: 1024 },
          },
          method: ref('Method'),
          callback_url: { type: 'string', format: 'uri' },
        },
      },
      BatchSubmitted: {
        type: 'object',
        required: ['id', 'status', 'total_emails', 'message'],
        properties: {
          id: { type: 'string' },
          status: { const: 'processing' },
          total_emails: { type: 'integer', minimum: 1 },
          message: { type: 'string' },
        },
      },
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
          status: { enum: ['processing', 'completed', 'failed'] },
          total_emails: { type: 'integer', minimum: 0 },
          processed: { type: 'integer', minimum: 0 },
          percent_complete: { type: 'number', minimum: 0, maximum: 100 },
          valid: { type: 'integer', minimum: 0 },
          invalid: { type: 'integer', minimum: 0 },
          risky: { type: 'integer', minimum: 0 },
          download_url: { type: 'string', format: 'uri' },
          reason: { type: 'string', description: 'Why a failed job failed.' },
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
          status: { enum: ['processing', 'failed'] },
          total_emails: { type: 'integer', minimum: 1 },
          processed: { type: 'integer', minimum: 0 },
          percent_complete: { type: 'number', minimum: 0, maximum: 100 },
        },
      },
      BatchRecord: {
        type: 'object',
        required: DETAILED_REQUIRED,
        properties: { ...DETAILED_PROPERTIES, duplicate: { type: 'boolean' } },
      },
      FilterType: { enum: ['email', 'domain', 'ip_address'] },
      FilterAction: { enum: ['block', 'allow'] },
      NewFilter: {
        type: 'object',
        additionalProperties: false,
        required: ['value', 'filter_type', 'action'],
        properties: {
          value: { type: 'string', minLength: 1, maxLength: 1024 },
          filter_type: ref('FilterType'),
          action: ref('FilterAction'),
          reason: { type: ['string', 'null'], minLength: 1, maxLength: 500 },
        },
      },
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
          total: { type: 'integer', minimum: 0 },
          page: { type: 'integer', minimum: 1 },
          per_page: { type: 'integer', minimum: 1, maximum: 100 },
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
          plan: { enum: ['free', 'starter', 'professional', 'enterprise'] },
          credits: {
            type: 'object',
            additionalProperties: false,
            required: ['available', 'reserved', 'used', 'total'],
            properties: {
              available: { type: 'integer', minimum: 0 },
              reserved: { type: 'integer', minimum: 0 },
              used: { type: 'integer', minimum: 0 },
              total: { type: 'integer', minimum: 0 },
            },
          },
          rate_limit: {
            type: 'object',
            additionalProperties: false,
            required: ['per_minute', 'remaining'],
            properties: {
              per_minute: { type: 'integer', minimum: 1 },
              remaining: { type: 'integer', minimum: 0 },
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
