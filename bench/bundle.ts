/**
 * Sizes of the browser-safe entries as browser bundles (esbuild, minified), raw and gzipped:
 * what a signup form pays to run the server's own syntax rules on the client
 * (mailverdict/parse), and what an app pays to call the API (mailverdict/client).
 */
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export interface BundleSize {
  readonly name: string;
  readonly minified: number;
  readonly gzipped: number;
}

const BROWSER_ENTRIES = {
  'mailverdict/parse': '../src/parse.ts',
  'mailverdict/client': '../src/client.ts',
} as const;

async function bundleSize(name: string, entry: string): Promise<BundleSize> {
  const built = await build({
    entryPoints: [fileURLToPath(new URL(entry, import.meta.url))],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    minify: true,
    write: false,
    logLevel: 'silent',
  });
  const code = built.outputFiles[0]?.contents ?? new Uint8Array();
  return { name, minified: code.byteLength, gzipped: gzipSync(code, { level: 9 }).byteLength };
}

export function browserBundleSizes(): Promise<BundleSize[]> {
  return Promise.all(
    Object.entries(BROWSER_ENTRIES).map(([name, entry]) => bundleSize(name, entry)),
  );
}

export function printBundleSizes(sizes: readonly BundleSize[]): void {
  console.log('\nBrowser bundles (esbuild, platform browser, minified)\n');
  console.log('| bundle | minified KB | min+gzip KB |');
  console.log('|---|---:|---:|');
  for (const { name, minified, gzipped } of sizes) {
    console.log(`| ${name} | ${(minified / 1024).toFixed(1)} | ${(gzipped / 1024).toFixed(1)} |`);
  }
}

// Run alone: `npx tsx bench/bundle.ts`.
if (import.meta.url === `file://${process.argv[1]}`) printBundleSizes(await browserBundleSizes());
