import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { OPENAPI_DOCUMENT } from '../../src/http/openapi.js';
import { ROUTES, type RouteSpec } from '../../src/http/routes.js';
import { RISK_FACTORS } from '../../src/checks/checker.js';
import { METHOD_NAMES } from '../../src/engine/methods.js';
import { STATES } from '../../src/engine/score.js';
import { REASONS } from '../../src/engine/verdict.js';
import { COMPACT_FIELDS, DETAILED_FIELDS, SHAPE_B_FIELDS } from '../../src/format/shapes.js';
import { MAX_SITE_SOURCE_LENGTH } from '../../src/http/verify-route.js';
import { JOB_STATUSES } from '../../src/ports/batch-store.js';
import { MAX_CALLBACK_URL_LENGTH } from '../../src/service/batch/callback-url.js';
import { PLAN_NAMES } from '../../src/service/plans.js';
import {
  FILTER_ACTIONS,
  FILTER_TYPES,
  MAX_BATCH_EMAILS,
  MAX_FILTER_PAGE,
  MAX_FILTER_REASON_LENGTH,
  MAX_FILTER_VALUE_LENGTH,
  MAX_FILTERS_PER_PAGE,
  MAX_ID_LENGTH,
  MAX_REQUEST_ID_LENGTH,
  RESULTS_FORMATS,
} from '../../src/service/request-fields.js';
import { MAX_EMAIL_INPUT_LENGTH } from '../../src/service/validate.js';

/** The document itself: every reference resolves, every schema compiles strictly. */
describe('the OpenAPI document', () => {
  const doc = OPENAPI_DOCUMENT as unknown as Record<string, unknown>;

  function resolve(pointer: string): unknown {
    return pointer
      .slice(2)
      .split('/')
      .reduce<unknown>(
        (node, part) => (node as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/')],
        doc,
      );
  }

  function refs(node: unknown, found: string[] = []): string[] {
    if (Array.isArray(node)) for (const item of node) refs(item, found);
    else if (typeof node === 'object' && node !== null) {
      for (const [key, value] of Object.entries(node)) {
        if (key === '$ref' && typeof value === 'string') found.push(value);
        else refs(value, found);
      }
    }
    return found;
  }

  it('is OpenAPI 3.1 with JSON Schema 2020-12', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.jsonSchemaDialect).toBe('https://json-schema.org/draft/2020-12/schema');
  });

  it('resolves every $ref', () => {
    const all = refs(doc);
    expect(all.length).toBeGreaterThan(20);
    for (const ref of all) expect(resolve(ref), ref).toBeDefined();
  });

  it('compiles every component schema in strict mode', () => {
    const ajv = new Ajv2020({ strict: true });
    (addFormatsModule as unknown as (ajv: Ajv2020) => void)(ajv);
    // Component references, pointed at a schema of their own for ajv to resolve.
    const schemas = JSON.parse(
      JSON.stringify((doc.components as { schemas: object }).schemas).replace(
        /#\/components\/schemas\//g,
        'components#/$defs/',
      ),
    ) as Record<string, object>;
    ajv.addSchema({ $id: 'components', $defs: schemas });
    for (const [name, schema] of Object.entries(schemas)) {
      expect(() => ajv.compile(schema), name).not.toThrow();
    }
  });

  it('documents every route of the table with its errors', () => {
    const paths = doc.paths as Record<string, Record<string, { responses: object }>>;
    expect(Object.keys(paths).sort()).toEqual(
      Object.values(ROUTES)
        .map((r) => r.path)
        .sort(),
    );
    for (const route of Object.values(ROUTES) as RouteSpec[]) {
      const methods = Object.keys(route.operations).map((method) => method.toLowerCase());
      if (methods.includes('get')) methods.push('head');
      const documented = Object.keys(paths[route.path] ?? {}).filter((m) => m !== 'options');
      expect(documented.sort(), route.path).toEqual(methods.sort());
    }
    for (const [path, operations] of Object.entries(paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (method === 'options' || path === '/v1/openapi.json') continue;
        for (const status of ['400', '401', '403', '405', '429', '500']) {
          expect(operation.responses, `${method} ${path} ${status}`).toHaveProperty(status);
        }
      }
    }
  });

  it("states the code's limits, enums and field lists", () => {
    const at = (pointer: string) => resolve(`#/${pointer}`);
    const schema = (name: string) => `components/schemas/${name}`;
    const query = (path: string, name: string) =>
      (at(`paths/${path.replace(/\//g, '~1')}/get/parameters`) as { name?: string }[]).find(
        (parameter) => parameter.name === name,
      ) as { schema: Record<string, unknown> };
    expect(at(`${schema('BatchRequest')}/properties/emails/maxItems`)).toBe(MAX_BATCH_EMAILS);
    expect(at(`${schema('BatchRequest')}/properties/emails/items/maxLength`)).toBe(
      MAX_EMAIL_INPUT_LENGTH,
    );
    expect(at(`${schema('BatchRequest')}/properties/callback_url/maxLength`)).toBe(
      MAX_CALLBACK_URL_LENGTH,
    );
    expect(at(`${schema('NewFilter')}/properties/value/maxLength`)).toBe(MAX_FILTER_VALUE_LENGTH);
    expect(at(`${schema('NewFilter')}/properties/reason/maxLength`)).toBe(MAX_FILTER_REASON_LENGTH);
    expect(at(`${schema('FilterList')}/properties/per_page/maximum`)).toBe(MAX_FILTERS_PER_PAGE);
    expect(at('components/parameters/Idempotency-Key/schema/maxLength')).toBe(
      MAX_REQUEST_ID_LENGTH,
    );
    expect(at('components/parameters/id/schema/pattern')).toContain(`{1,${MAX_ID_LENGTH}}`);
    expect(query('/v1/verify', 'site_source').schema.maxLength).toBe(MAX_SITE_SOURCE_LENGTH);
    expect(query('/v1/filters', 'per_page').schema.maximum).toBe(MAX_FILTERS_PER_PAGE);
    expect(query('/v1/filters', 'page').schema.maximum).toBe(MAX_FILTER_PAGE);
    expect(query('/v1/verify/{id}/results', 'format').schema.enum).toEqual(RESULTS_FORMATS);
    expect(at(`${schema('Method')}/enum`)).toEqual(METHOD_NAMES);
    expect(at(`${schema('State')}/enum`)).toEqual(STATES);
    expect(at(`${schema('Reason')}/enum`)).toEqual(REASONS);
    expect(at(`${schema('RiskFactor')}/enum`)).toEqual(RISK_FACTORS);
    expect(at(`${schema('FilterType')}/enum`)).toEqual(FILTER_TYPES);
    expect(at(`${schema('FilterAction')}/enum`)).toEqual(FILTER_ACTIONS);
    expect(at(`${schema('JobStatus')}/enum`)).toEqual(JOB_STATUSES);
    expect(at(`${schema('Account')}/properties/plan/enum`)).toEqual(PLAN_NAMES);
    expect(at(`${schema('CompactResult')}/required`)).toEqual(COMPACT_FIELDS);
    expect(at(`${schema('DetailedResult')}/required`)).toEqual(DETAILED_FIELDS);
    expect(Object.keys(at(`${schema('ShapeBResult')}/properties`) as object)).toEqual(
      SHAPE_B_FIELDS,
    );
  });
});
