import { parseArgs } from 'node:util';
import { createEngine } from '../engine/engine.js';
import { METHOD_NAMES, type MethodName } from '../engine/methods.js';
import type { Verdict } from '../engine/verdict.js';
import { toDetailed } from '../format/shapes.js';
import { optional } from '../optional.js';

const USAGE = `Usage: mailverdict verify [options] <address...>

Options:
  --method <quick|standard|smtp>  checks to run (default: standard)
  --offline                       no DNS: syntax, TLD and lists only
  --dns-server <ip[:port]>        name server to ask (repeatable; default: the system's)
  --helo <name>                   smtp: the name to greet with (EHLO)
  --mail-from <address>           smtp: the envelope sender of probes
  --smtp-port <port>              smtp: port of the mail hosts (default: 25)
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
        helo: { type: 'string' },
        'mail-from': { type: 'string' },
        'smtp-port': { type: 'string' },
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
  const port = values['smtp-port'] === undefined ? undefined : Number(values['smtp-port']);
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536)) {
    err(`--smtp-port must be a port number, got ${JSON.stringify(values['smtp-port'])}`);
    return 2;
  }
  const servers = values['dns-server'];
  const smtpOptions = {
    ...optional('heloName', values.helo),
    ...optional('mailFrom', values['mail-from']),
    ...optional('port', port),
  };
  const engine = createEngine({
    offline: values.offline,
    ...(servers === undefined ? {} : { dnsOptions: { servers } }),
    smtpOptions,
  });
  const method = values.method as MethodName;
  const verdicts: Verdict[] = [];
  // verifyMany groups the addresses by domain: one MX lookup and one SMTP session each.
  try {
    for await (const { index, verdict } of engine.verifyMany(addresses, { method })) {
      verdicts[index] = verdict;
    }
  } catch (error) {
    // Configuration mistakes (a HELO name with spaces, say) surface on first use.
    err((error as Error).message);
    return 2;
  }
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
