import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The signposts a maintainer follows stay true: comments cite docs/architecture.md or the
 * RFCs, never the sections of a design file that is not in the repository; every file the
 * architecture notes name is where they say, and every section of them a comment cites is
 * there.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ARCHITECTURE = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');

/** The folders whose code a user or maintainer reads. */
const CODE_FOLDERS = ['src', 'test', 'bench', 'scripts', 'examples'];
const CODE_FILE = /\.(?:ts|mts|cts|js|mjs|cjs|sh)$/;

function filesUnder(folder: string): string[] {
  const path = join(ROOT, folder);
  if (!existsSync(path)) return [];
  return readdirSync(path, { recursive: true, encoding: 'utf8' })
    .map((name) => join(path, name))
    .filter((file) => CODE_FILE.test(file) && statSync(file).isFile());
}

/**
 * The design file's name, as its citations wrote it ("DESIGN 5.3", "(DESIGN 8)", "the DESIGN's
 * five checks", "DESIGN.md"): users of the package do not have that file.
 */
const DESIGN_CITATION = /\bDESIGN\b/;
/** This file, which shows what a citation looks like. */
const SELF = fileURLToPath(import.meta.url);

describe('signposts', () => {
  it('no code cites the design file: comments cite docs/architecture.md or an RFC', () => {
    const citations: string[] = [];
    for (const file of CODE_FOLDERS.flatMap(filesUnder)) {
      if (file === SELF) continue;
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, index) => {
          if (DESIGN_CITATION.test(line)) {
            citations.push(`${relative(ROOT, file)}:${index + 1}: ${line.trim()}`);
          }
        });
    }
    expect(citations).toEqual([]);
  });

  it('finds a citation of the design file when there is one', () => {
    // The pattern must bite, or the test before passes on any tree.
    for (const cited of [
      '// DESIGN 5.3: a hold expires',
      ' * (DESIGN 8): the cold start',
      "Quick stays the DESIGN's five checks.",
      'see DESIGN.md',
    ]) {
      expect(DESIGN_CITATION.test(cited), cited).toBe(true);
    }
    expect(DESIGN_CITATION.test('// docs/architecture.md, "Batch path"')).toBe(false);
    expect(DESIGN_CITATION.test('const design = 1; // the design of the batch path')).toBe(false);
  });

  it('names only files that exist in docs/architecture.md', () => {
    // Every `code span` that is a path from the repository's root (a dotfile, or under one
    // of its folders), placeholders and globs such as `src/checks/<name>.ts` aside.
    const named = [...ARCHITECTURE.matchAll(/`([^`\s<>*]+)`/g)]
      .map((match) => match[1] as string)
      .filter((span) =>
        /^(?:\.[\w.-]+|(?:src|test|bench|scripts|docs|examples|data)\/)/.test(span),
      );
    expect(named.length).toBeGreaterThan(50);
    const missing = named.filter((path) => !existsSync(join(ROOT, path)));
    expect(missing).toEqual([]);
  });

  it('has the sections that code comments cite', () => {
    const headings = new Set(
      [...ARCHITECTURE.matchAll(/^#{2,3} (.+)$/gm)].map((match) => match[1] as string),
    );
    const cited = new Set<string>();
    for (const file of CODE_FOLDERS.flatMap(filesUnder)) {
      const text = readFileSync(file, 'utf8');
      // The section's name may wrap onto the next comment line.
      const citation = /docs\/architecture\.md,?\s+(?:(?:\*|\/\/)\s+)?"([^"]+)"/g;
      for (const match of text.matchAll(citation)) {
        const lines = (match[1] as string).split('\n').map((line) => line.trim());
        cited.add(lines.map((line) => line.replace(/^(?:\*|\/\/) ?/, '')).join(' '));
      }
    }
    expect([...cited].filter((section) => !headings.has(section))).toEqual([]);
  });
});
