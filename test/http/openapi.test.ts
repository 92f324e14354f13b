import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { OPENAPI_DOCUMENT } from '../../src/http/openapi.js';

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

  it('documents every route with its errors', () => {
    const paths = doc.paths as Record<string, Record<string, { responses: object }>>;
    expect(Object.keys(paths).sort()).toEqual([
      '/v1/account',
      '/v1/filters',
      '/v1/filters/{id}',
      '/v1/openapi.json',
      '/v1/verify',
      '/v1/verify/{id}',
      '/v1/verify/{id}/results',
    ]);
    for (const [path, operations] of Object.entries(paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (method === 'options' || path === '/v1/openapi.json') continue;
        for (const status of ['400', '401', '403', '405', '429', '500']) {
          expect(operation.responses, `${method} ${path} ${status}`).toHaveProperty(status);
        }
      }
    }
  });
});
