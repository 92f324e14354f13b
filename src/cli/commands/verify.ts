import { createEngine } from '../../compose/engine.js';
import { parseAddress } from '../../address/parse.js';
import { toResultRecord, type ResultRecord } from '../../format/shapes.js';
import { repeatFinder } from '../../service/batch/repeats.js';
import { concurrencyOf, engineOptionsOf, methodOf, type EngineFlags } from '../engine-options.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { line, type CliIo } from '../io.js';
import { cliRecordOf, NDJSON } from '../records.js';
import { remoteOf, remoteResults, type RemoteFlags } from '../remote.js';
import { table } from '../terminal.js';

export interface VerifyFlags extends EngineFlags, RemoteFlags {
  readonly json?: boolean;
  readonly strict?: boolean;
}

/** One address as given, and its record: verified here or by the server. */
interface Verified {
  readonly input: string;
  readonly record: ResultRecord;
}

/**
 * `mailverdict verify <address...>`: a table (or NDJSON) in the order given. Like curl, a
 * verdict is a result, not a failure: the exit code is 0 once every address has one, unless
 * `--strict` asks it to say the worst verdict (`mailverdict verify --strict "$email" && ...`).
 * With `--server`, the addresses go to that server as one batch job, and its records are
 * written the same way.
 */
export async function verifyCommand(
  addresses: readonly string[],
  flags: VerifyFlags,
  io: CliIo,
): Promise<ExitCode> {
  const method = methodOf(flags);
  const client = remoteOf(flags);
  const verified: Verified[] = [];
  let parse = parseAddress;
  if (client === undefined) {
    const engine = createEngine(engineOptionsOf(flags));
    parse = engine.parse;
    const concurrency = concurrencyOf(flags);
    for await (const { index, verdict } of engine.verifyMany(addresses, {
      method,
      ...(concurrency === undefined ? {} : { concurrency }),
    })) {
      verified[index] = { input: verdict.input, record: toResultRecord(verdict) };
    }
  } else {
    for await (const { position, input, record } of remoteResults(client, addresses, {
      method,
      whereIs: (position) => `argument ${position + 1}`,
    })) {
      verified[position] = { input, record };
    }
  }
  if (flags.json === true) {
    const earlierOf = repeatFinder();
    verified.forEach(({ input, record }, position) => {
      const duplicate = earlierOf(input, parse(input), position) !== undefined;
      io.stdout.write(NDJSON.line(cliRecordOf({ index: position + 1, input, duplicate }, record)));
    });
  } else {
    const rows = verified.map(({ record }) => [
      record.email,
      record.state,
      String(record.score),
      record.reason,
      record.error?.message ?? details(record),
    ]);
    for (const text of table(['ADDRESS', 'STATE', 'SCORE', 'REASON', 'DETAILS'], rows)) {
      line(io.stdout, text);
    }
  }
  if (flags.strict !== true) return EXIT.ok;
  if (verified.some(({ record }) => record.state === 'undeliverable')) return EXIT.undeliverable;
  return verified.some(({ record }) => record.state === 'risky') ? EXIT.risky : EXIT.ok;
}

/** The DETAILS column: the risk factors, then the address probably meant, if any. */
function details(record: ResultRecord): string {
  const factors = record.risk_factors.join(', ');
  if (record.did_you_mean === null) return factors;
  return `${factors}; did you mean ${record.did_you_mean}?`;
}
