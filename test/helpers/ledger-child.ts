// The service on a durable store in its own process, driven over stdin/stdout (one JSON request
// per line, one JSON answer per line), so that a test can crash it and reopen the store: a
// SQLite file, or a Redis server (argv[2] a redis:// URL, argv[5] the run's key prefix). A
// request may carry `crashAfterWrites: k`: the process then SIGKILLs itself right after its
// k-th ledger transaction commits (k = 0: before any), or after answering if there are fewer,
// which is a crash between any two steps of a verify. Run by test/property/ledger.model.test.ts.
import { createInterface } from 'node:readline';
import type { Store } from '../../src/ports/store.js';
import { createRedisStore } from '../../src/redis.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { ledgerSystem, modelService, shiftingClock } from './ledger-system.js';

let writesBeforeCrash = Number.POSITIVE_INFINITY;
const die = () => process.kill(process.pid, 'SIGKILL');

// No interval sweeps: the model sweeps when it moves the clock (the sweep at open stays).
const location = process.argv[2] as string;
const durable = location.startsWith('redis://')
  ? createRedisStore(location, { keyPrefix: process.argv[5] as string, holdSweepMs: 0 })
  : createSqliteStore(location, { holdSweepMs: 0 });
// Every ledger transaction is a commit point: a plain request, a verify's commits, a sweep.
const store: Store = {
  ...durable,
  async applyLedger(...args) {
    const outcome = await durable.applyLedger(...args);
    if (--writesBeforeCrash <= 0) die();
    return outcome;
  },
  async commitLedger(...args) {
    const outcome = await durable.commitLedger(...args);
    if (--writesBeforeCrash <= 0) die();
    return outcome;
  },
  async sweep(...args) {
    const released = await durable.sweep(...args);
    if (--writesBeforeCrash <= 0) die();
    return released;
  },
};
// The clock resumes where the killed process had moved it (argv[3], ms ahead of Date.now).
const clock = shiftingClock(Number(process.argv[3] ?? 0));
// argv[4] 'offline': the synchronous path, each verify one commit.
const system = ledgerSystem(modelService(store, clock, process.argv[4] === 'offline'), clock);

createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, op, args, crashAfterWrites } = JSON.parse(line) as {
    id: number;
    op: string;
    args: unknown[];
    crashAfterWrites?: number;
  };
  if (crashAfterWrites !== undefined) {
    if (crashAfterWrites === 0) die();
    writesBeforeCrash = crashAfterWrites;
  }
  const call = (system as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[op];
  call!(...args).then(
    (result) => {
      process.stdout.write(`${JSON.stringify({ id, result })}\n`);
      if (crashAfterWrites !== undefined) die();
    },
    (error: unknown) =>
      process.stdout.write(`${JSON.stringify({ id, error: String((error as Error).stack) })}\n`),
  );
});
process.stdout.write(`${JSON.stringify({ id: 0, result: 'ready' })}\n`);
