import { parseArgs } from 'node:util';
import { createEngine } from '../engine/engine.js';
import { METHOD_NAMES, type MethodName } from '../engine/methods.js';
import type { Verdict } from '../engine/verdict.js';
import { toDetailed } from '../format/shapes.js';

const USAGE = `Usage: mailverdict verify [options] <address...>

Options:
  --method <quick|standard|smtp>  checks to run (default: standard)
  --offline                       no DNS: syntax, TLD and lists only
  --dns-server <ip[:port]>        name server to ask (repeatable; default: the system's)
  --json                          one JSON object per line (detailed shape)
  -h, --help                      show this help`;

/** Runs the CLI with its arguments and streams; returns the exit code. */
export async function main(
  argv: readonly string[],
  out: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
  err: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        method: { type: 'string', default: 'standard' },
        offline: { type: 'boolean', default: false },
        'dns-server': { type: 'string', multiple: true },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    err(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    out(USAGE);
    return 0;
  }
  const [command, ...addresses] = positionals;
  if (command !== 'verify' || addresses.length === 0) {
    err(USAGE);
    return 2;
  }
  if (!(METHOD_NAMES as readonly string[]).includes(values.method)) {
    err(
      `Unknown method ${JSON.stringify(values.method)}: expected one of ${METHOD_NAMES.join(', ')}`,
    );
    return 2;
  }
  const servers = values['dns-server'];
  const engine = createEngine({
    offline: values.offline,
    ...(servers === undefined ? {} : { dnsOptions: { servers } }),
  });
  const method = values.method as MethodName;
  const verdicts = await Promise.all(
    addresses.map((address) => engine.verify(address, { method })),
  );
  if (values.json) {
    for (const verdict of verdicts) out(JSON.stringify(toDetailed(verdict)));
  } else {
    for (const line of table(verdicts)) out(line);
  }
  return 0;
}

/** A plain-text table: address, state, score, reason, risk factors. */
function table(verdicts: readonly Verdict[]): string[] {
  const rows = verdicts.map((v) => [
    v.email,
    v.state,
    String(v.score),
    v.reason,
    v.error?.message ?? v.riskFactors.join(', '),
  ]);
  const header = ['ADDRESS', 'STATE', 'SCORE', 'REASON', 'DETAILS'];
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((r) => (r[i] as string).length)),
  );
  return [header, ...rows].map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] as number)))
      .join('  ')
      .trimEnd(),
  );
}
