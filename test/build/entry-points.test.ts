import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';

/**
 * An engine-only user loads none of the service, SQLite, SMTP or rate-limiter code
 * (docs/architecture.md, "Entry points").
 * Bundled the way `npm run build` bundles (scripts/bundle.mjs), the `mailverdict` entry's
 * statically reachable code is checked file by file; the SMTP client may only be a chunk
 * loaded on the first probe.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

async function staticInputs(entry: string): Promise<{ inputs: Set<string>; lazy: Set<string> }> {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { index: entry },
    outdir: 'dist-test-unused',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    packages: 'external',
    metafile: true,
    write: false,
    logLevel: 'silent',
  });
  const outputs = (result.metafile as Metafile).outputs;
  const entryOutput = Object.keys(outputs).find((name) => outputs[name]?.entryPoint === entry);
  const inputs = new Set<string>();
  const lazy = new Set<string>();
  const seen = new Set<string>();
  const visit = (name: string, target: Set<string>) => {
    if (seen.has(name) || outputs[name] === undefined) return;
    seen.add(name);
    const output = outputs[name];
    for (const input of Object.keys(output.inputs)) target.add(input);
    for (const imported of output.imports) {
      if (imported.kind !== 'import-statement') continue;
      if (imported.external === true) target.add(`external:${imported.path}`);
      else visit(imported.path, target);
    }
  };
  visit(entryOutput as string, inputs);
  for (const name of Object.keys(outputs)) if (!seen.has(name)) visit(name, lazy);
  return { inputs, lazy };
}

describe('entry points', () => {
  it('mailverdict (the engine) reaches no service, SQLite, SMTP or limiter code', async () => {
    const { inputs, lazy } = await staticInputs('src/index.ts');
    const forbidden = [...inputs].filter(
      (input) =>
        input.startsWith('src/service/') ||
        input.startsWith('src/store/') ||
        input.includes('sqlite') ||
        input.includes('redis') ||
        input === 'src/adapters/node/smtp.ts' ||
        input.startsWith('src/http/') ||
        /external:(?:rate-limiter-flexible|better-sqlite3|tldts|ipaddr\.js|commander|bullmq|ioredis)/.test(
          input,
        ),
    );
    expect(forbidden).toEqual([]);
    expect(inputs.has('src/engine/engine.ts')).toBe(true);
    // The SMTP client is there, for the first probe, as a chunk of its own.
    expect(lazy.has('src/adapters/node/smtp.ts')).toBe(true);
  });

  it('mailverdict/parse reaches only the parser', async () => {
    const { inputs } = await staticInputs('src/parse.ts');
    const outside = [...inputs].filter(
      (input) =>
        !input.startsWith('src/address/') &&
        !input.startsWith('src/data/generated/') &&
        input !== 'src/parse.ts',
    );
    expect(outside.filter((input) => !input.startsWith('external:punycode'))).toEqual([]);
  });
});

describe('mailverdict/client', () => {
  it('reaches only the client and the timer helper: no node: module, no dependency', async () => {
    const { inputs, lazy } = await staticInputs('src/client.ts');
    const outside = [...inputs, ...lazy].filter(
      (input) =>
        !input.startsWith('src/client/') && input !== 'src/client.ts' && input !== 'src/delay.ts',
    );
    expect(outside).toEqual([]);
    expect(inputs.has('src/client/transport.ts')).toBe(true);
  });
});
