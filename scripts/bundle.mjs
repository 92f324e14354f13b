// `npm run build`, second half: after tsc has written the type declarations to dist/, esbuild
// bundles each entry point into one ES module (shared code in dist/chunks/), so that importing
// mailverdict reads a few files instead of resolving some 80 modules one by one: module
// loading was most of the cold start (the bench's cold-start row). Dependencies stay external,
// except the small pure ones the engine needs on its first verdict.
import { readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const manifest = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));

/** Bundled in: used by every verification, small, pure, and cheaper inlined than resolved. */
const INLINE = new Set(['lru-cache', 'punycode']);

export const ENTRY_POINTS = {
  index: 'src/index.ts',
  parse: 'src/parse.ts',
  service: 'src/service.ts',
  smtp: 'src/smtp.ts',
  testing: 'src/testing.ts',
  sqlite: 'src/sqlite.ts',
  redis: 'src/redis.ts',
  http: 'src/http.ts',
  node: 'src/node.ts',
  bullmq: 'src/bullmq.ts',
  client: 'src/client.ts',
  'cli/bin': 'src/cli/bin.ts',
};

const external = [
  ...Object.keys(manifest.dependencies ?? {}),
  ...Object.keys(manifest.peerDependencies ?? {}),
].filter((name) => !INLINE.has(name));

rmSync(`${root}dist/chunks`, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: ENTRY_POINTS,
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  // Subpaths too: `punycode/punycode.js` is inlined, `better-sqlite3/...` is not.
  external: external.flatMap((name) => [name, `${name}/*`]),
  sourcemap: true,
  legalComments: 'linked',
  logLevel: 'warning',
});
