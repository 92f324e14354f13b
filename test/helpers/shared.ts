import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** ../shared beside the project: present in CI and the team's checkouts, absent in a user's clone. */
export const SHARED_DIR = fileURLToPath(new URL('../../../shared/', import.meta.url));

export interface CorpusCase {
  readonly address: string;
  readonly valid: boolean;
  readonly source: string;
  readonly note: string;
}

/** A corpus from shared/corpora/syntax, or undefined (with a notice) when shared/ is absent. */
export function loadSyntaxCorpus(name: string): CorpusCase[] | undefined {
  const path = `${SHARED_DIR}corpora/syntax/${name}`;
  if (!existsSync(path)) {
    console.warn(`[notice] ${path} is absent: the corpus test is skipped (it needs ../shared).`);
    return undefined;
  }
  return JSON.parse(readFileSync(path, 'utf8')) as CorpusCase[];
}
