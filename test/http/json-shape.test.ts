import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonShape } from '../../src/http/json-shape.js';
import { fcParams } from '../helpers/fast-check.js';

const UTF8 = new TextEncoder();

/** How deep `value` nests and how many elements JsonShape counts in it (opened + commas). */
function reference(value: unknown): { depth: number; elements: number } {
  if (typeof value !== 'object' || value === null) return { depth: 0, elements: 0 };
  const children = Array.isArray(value) ? value : Object.values(value);
  let depth = 0;
  let elements = 1 + Math.max(0, children.length - 1);
  for (const child of children) {
    const inner = reference(child);
    depth = Math.max(depth, inner.depth);
    elements += inner.elements;
  }
  return { depth: depth + 1, elements };
}

/** `bytes` cut at the given points, in order. */
function parts(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let start = 0;
  for (const point of [...points, bytes.length]) {
    out.push(bytes.subarray(start, point));
    start = point;
  }
  return out;
}

function scanAll(
  shape: JsonShape,
  chunks: readonly Uint8Array[],
): 'depth' | 'elements' | undefined {
  for (const chunk of chunks) {
    const passed = shape.scan(chunk);
    if (passed !== undefined) return passed;
  }
  return undefined;
}

describe('JsonShape', () => {
  it('counts the depth, elements and top-level members of any JSON, however it is cut', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 6 }),
        fc.constantFrom(undefined, 1, '\t'),
        fc.array(fc.nat(), { maxLength: 8 }),
        (value, indent, cuts) => {
          const bytes = UTF8.encode(JSON.stringify(value, null, indent));
          const { depth, elements } = reference(value);
          const exact = new JsonShape(depth, elements);
          expect(scanAll(exact, parts(bytes, cuts))).toBeUndefined();
          expect(exact.elements).toBe(elements);
          const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
          if (isObject) expect(exact.topLevelMembers).toBe(Object.keys(value).length);
          if (depth > 0) {
            const shallow = new JsonShape(depth - 1, Number.MAX_SAFE_INTEGER);
            expect(scanAll(shallow, parts(bytes, cuts))).toBe('depth');
            const few = new JsonShape(Number.MAX_SAFE_INTEGER, elements - 1);
            expect(scanAll(few, parts(bytes, cuts))).toBe('elements');
          }
        },
      ),
      fcParams(),
    );
  });

  it('reads escaped quotes and backslashes inside strings, even cut between them', () => {
    const text = '{"a\\"[":"\\\\","b":["\\\\\\"{"],"c":"\\u005b"}';
    expect(Object.keys(JSON.parse(text))).toEqual(['a"[', 'b', 'c']);
    const bytes = UTF8.encode(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const shape = new JsonShape(2, 100);
      expect(scanAll(shape, parts(bytes, [cut]))).toBeUndefined();
      expect(shape.topLevelMembers).toBe(3);
      expect(shape.elements).toBe(4);
    }
  });

  it('counts a repeated member name, which JSON.parse keeps once', () => {
    const shape = new JsonShape(16, 100);
    shape.scan(UTF8.encode('{"emails":["a@example.org"],"emails":[]}'));
    expect(shape.topLevelMembers).toBe(2);
  });

  it('refuses 16 MB of nested arrays after reading past the depth, not the whole of it', () => {
    const bytes = UTF8.encode(`{"emails":${'['.repeat(16 * 1024 * 1024)}`);
    const shape = new JsonShape(16, 100_000);
    expect(shape.scan(bytes.subarray(0, 64 * 1024))).toBe('depth');
    expect(shape.elements).toBe(17);
  });

  it('refuses 16 MB of elements once they pass the count', () => {
    const shape = new JsonShape(16, 100_000);
    const chunk = UTF8.encode('1,'.repeat(32 * 1024));
    let read = 0;
    let passed: string | undefined;
    shape.scan(UTF8.encode('{"emails":['));
    while (passed === undefined && read < 16 * 1024 * 1024) {
      passed = shape.scan(chunk);
      read += chunk.length;
    }
    expect(passed).toBe('elements');
    // Two bytes an element: refused within the chunk that holds the 100,001st.
    expect(read).toBeLessThanOrEqual(2 * 100_000 + chunk.length);
  });
});
