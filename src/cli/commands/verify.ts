import { createEngine } from '../../compose/engine.js';
import { repeatFinder } from '../../service/batch/repeats.js';
import type { Verdict } from '../../engine/verdict.js';
import { concurrencyOf, engineOptionsOf, methodOf, type EngineFlags } from '../engine-options.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { line, type CliIo } from '../io.js';
import { NDJSON, recordOf } from '../records.js';
import { table } from '../terminal.js';

export interface VerifyFlags extends EngineFlags {
  readonly json?: boolean;
  readonly strict?: boolean;
}

/**
 * `mailverdict verify <address...>`: a table (or NDJSON) in the order given. Like curl, a
 * verdict is a result, not a failure: the exit code is 0 once every address has one, unless
 * `--strict` asks it to say the worst verdict (`mailverdict verify --strict "$email" && ...`).
 */
export async function verifyCommand(
  addresses: readonly string[],
  flags: VerifyFlags,
  io: CliIo,
): Promise<ExitCode> {
  const method = methodOf(flags);
  const engine = createEngine(engineOptionsOf(flags));
  const concurrency = concurrencyOf(flags);
  const verdicts: Verdict[] = [];
  for await (const { index, verdict } of engine.verifyMany(addresses, {
    method,
    ...(concurrency === undefined ? {} : { concurrency }),
  })) {
    verdicts[index] = verdict;
  }
  if (flags.json === true) {
    const earlierOf = repeatFinder();
    verdicts.forEach((verdict, position) => {
      const repeat = earlierOf(verdict.input, engine.parse(verdict.input), position);
      io.stdout.write(NDJSON.line(recordOf(verdict, position + 1, repeat !== undefined)));
    });
  } else {
    const rows = verdicts.map((v) => [
      v.email,
      v.state,
      String(v.score),
      v.reason,
      v.error?.message ?? details(v),
    ]);
    for (const text of table(['ADDRESS', 'STATE', 'SCORE', 'REASON', 'DETAILS'], rows)) {
      line(io.stdout, text);
    }
  }
  if (flags.strict !== true) return EXIT.ok;
  if (verdicts.some((v) => v.state === 'undeliverable')) return EXIT.undeliverable;
  return verdicts.some((v) => v.state === 'risky') ? EXIT.risky : EXIT.ok;
}

/** The DETAILS column: the risk factors, then the address probably meant, if any. */
function details(verdict: Verdict): string {
  const factors = verdict.riskFactors.join(', ');
  if (verdict.didYouMean === null) return factors;
  return `${factors}; did you mean ${verdict.didYouMean}?`;
}
