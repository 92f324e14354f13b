import fc from 'fast-check';

/**
 * fast-check parameters with the seed taken from FC_SEED (or a fresh one), printed on failure
 * so that any run can be replayed: FC_SEED=<seed> npm test.
 */
export function fcParams<T>(overrides: fc.Parameters<T> = {}): fc.Parameters<T> {
  const fromEnv = process.env.FC_SEED;
  const seed =
    fromEnv !== undefined && fromEnv !== ''
      ? Number(fromEnv)
      : Date.now() ^ (Math.random() * 0x7fffffff);
  const numRuns = process.env.FC_RUNS !== undefined ? Number(process.env.FC_RUNS) : undefined;
  return {
    seed,
    ...(numRuns === undefined ? {} : { numRuns }),
    reporter(details) {
      if (details.failed) {
        throw new Error(`${fc.defaultReportMessage(details)}\nReplay with FC_SEED=${seed}`);
      }
    },
    ...overrides,
  };
}
