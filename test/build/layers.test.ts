import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layer directions of .dependency-cruiser.cjs, as `npm run lint` checks them: forbidden
 * imports of each kind are written into src/ as probe files, the lint script is run once over
 * the whole tree, and exactly the probes' breaches must come back (the real code has none).
 * Probe files are named `*.layer-probe.ts`, which .gitignore keeps out of commits should a
 * killed run leave one behind; they are removed in `finally`.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Probe {
  /** Path from the repository root, with {id} for this run's random name. */
  readonly file: string;
  readonly source: string;
  /** The rules the probe must break (a probe may break two). */
  readonly rules: readonly string[];
}

const PROBES: readonly Probe[] = [
  {
    file: 'src/engine/{id}.layer-probe.ts',
    source: "export { createNodeDns } from '../adapters/node/dns.js';\n",
    rules: ['pure-layers-import-pure-code-and-ports'],
  },
  {
    file: 'src/checks/{id}.layer-probe.ts',
    source: "export type { Service } from '../service/service.js';\n",
    rules: ['pure-layers-import-pure-code-and-ports'],
  },
  {
    file: 'src/ports/{id}.layer-probe.ts',
    source: "export type { Charging } from '../service/charging.js';\n",
    rules: ['ports-import-only-ports'],
  },
  {
    file: 'src/store/rules/{id}.layer-probe.ts',
    source: "export { canonicalIp } from '../../service/ip-ranges.js';\n",
    rules: ['store-rules-import-only-ports'],
  },
  {
    file: 'src/store/{id}.layer-probe.ts',
    source: "export { SERVICE_ERROR_STATUS } from '../service/service-error.js';\n",
    rules: ['memory-store-imports-ports-and-store-rules'],
  },
  {
    file: 'src/adapters/sqlite/{id}.layer-probe.ts',
    source: "export { createMemoryStore } from '../../store/memory-store.js';\n",
    rules: ['durable-adapters-import-ports-and-store-rules'],
  },
  {
    file: 'src/adapters/redis/{id}.layer-probe.ts',
    source: "export { createSqliteStore } from '../sqlite/store.js';\n",
    rules: ['durable-adapters-import-ports-and-store-rules'],
  },
  {
    file: 'src/adapters/bullmq/{id}.layer-probe.ts',
    source: "export { chunkByDomain } from '../../service/batch/chunks.js';\n",
    rules: ['durable-adapters-import-ports-and-store-rules'],
  },
  {
    file: 'src/adapters/node/{id}.layer-probe.ts',
    source: "export { createService } from '../../compose/service.js';\n",
    rules: ['io-adapters-import-pure-code-and-ports'],
  },
  {
    file: 'src/service/{id}.layer-probe.ts',
    source: "export { createNodeWebhookSender } from '../adapters/node/webhook.js';\n",
    rules: ['service-imports-no-adapter-http-or-cli'],
  },
  {
    file: 'src/http/{id}.layer-probe.ts',
    source: "export { createSqliteStore } from '../adapters/sqlite/store.js';\n",
    rules: ['http-imports-no-adapter'],
  },
  {
    file: 'src/compose/{id}.layer-probe.ts',
    source: "export { EXIT } from '../cli/exit-codes.js';\n",
    rules: ['composition-imports-no-http-or-cli', 'nothing-imports-the-cli'],
  },
  {
    file: 'src/format/{id}.layer-probe.ts',
    source: "export { createEngine } from '../index.js';\n",
    rules: ['pure-layers-import-pure-code-and-ports', 'only-entries-and-the-cli-import-entries'],
  },
  // Two files that import each other: a cycle, within one layer.
  {
    file: 'src/engine/{id}-a.layer-probe.ts',
    source: "import { b } from './{id}-b.layer-probe.js';\nexport const a = (): unknown => b;\n",
    rules: ['no-circular'],
  },
  {
    file: 'src/engine/{id}-b.layer-probe.ts',
    source: "import { a } from './{id}-a.layer-probe.js';\nexport const b = (): unknown => a;\n",
    rules: ['no-circular'],
  },
];

/**
 * Runs the lint script's layer check (npm run lint:layers) over src/, as `npm run lint` does:
 * its exit code, and each breach it reports as `rule from` (its lines read
 * `error <rule>: <from> → <to>`).
 */
function lintLayers(): Promise<{ code: number; breaches: string[] }> {
  return new Promise((resolve) => {
    execFile(
      'npm',
      ['run', '--silent', 'lint:layers'],
      { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        const breaches = stdout
          .split('\n')
          .map((line) => /^\s*error ([\w-]+): (\S+)/.exec(line))
          .flatMap((match) => (match === null ? [] : [`${match[1]} ${match[2]}`]));
        resolve({ code, breaches });
      },
    );
  });
}

describe('layer directions (npm run lint)', () => {
  it('runs the layer check as part of npm run lint', () => {
    const { scripts } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(scripts.lint).toContain('npm run lint:layers');
    expect(scripts['lint:layers']).toBe('depcruise --config .dependency-cruiser.cjs src');
  });

  it('fails on each kind of forbidden import and on a cycle, and passes the code as it is', async () => {
    const id = `probe-${randomBytes(6).toString('hex')}`;
    const files = PROBES.map((probe) => probe.file.replaceAll('{id}', id));
    try {
      PROBES.forEach((probe, index) => {
        writeFileSync(`${ROOT}${files[index]}`, probe.source.replaceAll('{id}', id));
      });
      const { code, breaches } = await lintLayers();
      expect(code).not.toBe(0);
      const found = breaches.sort();
      const expected = PROBES.flatMap((probe, index) =>
        probe.rules.map((rule) => `${rule} ${files[index]}`),
      );
      // A cycle is reported once, from either of its files.
      const cycle = expected.filter((entry) => entry.startsWith('no-circular '));
      const others = expected.filter((entry) => !entry.startsWith('no-circular ')).sort();
      expect(found.filter((entry) => !entry.startsWith('no-circular '))).toEqual(others);
      const cycles = found.filter((entry) => entry.startsWith('no-circular '));
      expect(cycles).toHaveLength(1);
      expect(cycle).toContain(cycles[0]);
    } finally {
      for (const file of files) rmSync(`${ROOT}${file}`, { force: true });
    }
  }, 120_000);
});
