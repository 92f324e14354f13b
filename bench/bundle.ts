/**
 * Size of mailverdict/parse as a browser bundle (esbuild, minified), raw and gzipped: what a
 * signup form pays to run the server's own syntax rules on the client.
 */
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export async function parseBundleSize(): Promise<{ minified: number; gzipped: number }> {
  const built = await build({
    entryPoints: [fileURLToPath(new URL('../src/parse.ts', import.meta.url))],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    minify: true,
    write: false,
    logLevel: 'silent',
  });
  const code = built.outputFiles[0]?.contents ?? new Uint8Array();
  return { minified: code.byteLength, gzipped: gzipSync(code, { level: 9 }).byteLength };
}

export function printBundleSize({ minified, gzipped }: { minified: number; gzipped: number }) {
  console.log('\nmailverdict/parse as a browser bundle (esbuild, platform browser, minified)\n');
  console.log('| bundle | minified KB | min+gzip KB |');
  console.log('|---|---:|---:|');
  console.log(
    `| mailverdict/parse | ${(minified / 1024).toFixed(1)} | ${(gzipped / 1024).toFixed(1)} |`,
  );
}
