// A batch job on a SQLite file in its own process, so that a test can SIGKILL it at chosen
// points and run it again on the same file. argv[2]: the file; argv[3]: a JSON plan:
//   { submit?: { emails, method }, killAt?: { op, nth, when: 'before' | 'after' }, holdTtlMs? }
// `killAt` counts calls of one Store write (createJob, recordJobResults, reholdJob, finishJob)
// and kills the process right before the nth call starts or right after it committed;
// `killAtTurn` kills it at that turn of the event loop after the submission starts (a large
// job is written in slices, a turn between them). The child prints one JSON line when it
// finishes: what it submitted or that the job completed.
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { createEngine } from '../../src/compose/engine.js';
import type { Store } from '../../src/ports/store.js';
import { createService } from '../../src/compose/service.js';
import { createSqliteStore } from '../../src/sqlite.js';

interface Plan {
  readonly submit?: { emails: string[]; method: 'quick' | 'standard' };
  readonly killAt?: { op: keyof Store; nth: number; when: 'before' | 'after' };
  readonly holdTtlMs?: number;
  readonly domains: number;
  /** Print `{"stored":n}` after each results write, for a parent that kills from outside. */
  readonly reportWrites?: boolean;
  readonly killAtTurn?: number;
  /** The store's slice budget (createSqliteStore's sliceMs), and the service's. */
  readonly storeSliceMs?: number;
  readonly batchSliceMs?: number;
}

const plan = JSON.parse(process.argv[3] as string) as Plan;
const die = () => process.kill(process.pid, 'SIGKILL');
const sqlite = createSqliteStore(process.argv[2] as string, {
  holdSweepMs: 0,
  ...(plan.storeSliceMs === undefined ? {} : { sliceMs: plan.storeSliceMs }),
});
let calls = 0;
const store: Store = { ...sqlite };
if (plan.killAt !== undefined) {
  const { op, nth, when } = plan.killAt;
  const inner = sqlite[op] as (...args: unknown[]) => Promise<unknown>;
  (store as unknown as Record<string, unknown>)[op] = async (...args: unknown[]) => {
    calls++;
    if (calls === nth && when === 'before') die();
    const result = await inner(...args);
    if (calls === nth && when === 'after') die();
    return result;
  };
}

if (plan.reportWrites === true) {
  const inner = store.recordJobResults;
  let writes = 0;
  store.recordJobResults = async (...args) => {
    const outcome = await inner(...args);
    process.stdout.write(`${JSON.stringify({ stored: ++writes })}\n`);
    return outcome;
  };
}

const zones: Record<string, string[]> = {};
for (let d = 0; d < plan.domains; d++) zones[`d${d}.example`] = [`mx.d${d}.example`];
const dns = createMemoryDns(zones);
// Answers come on later turns of the event loop, as a resolver's would.
const engine = createEngine({
  dns: {
    mx: (domain, signal) => new Promise((r) => setImmediate(() => r(dns.mx(domain, signal)))),
  },
});
const service = createService({
  engine,
  store,
  batch: {
    flushSize: 16,
    concurrency: 8,
    ...(plan.holdTtlMs === undefined ? {} : { holdTtlMs: plan.holdTtlMs }),
    ...(plan.batchSliceMs === undefined ? {} : { sliceMs: plan.batchSliceMs }),
  },
});

if (plan.submit !== undefined) {
  const account = await service.admin.createAccount({ email: 'ops@example.org', credits: 100_000 });
  process.stdout.write(`${JSON.stringify({ accountId: account.id })}\n`);
  if (plan.killAtTurn !== undefined) {
    let turns = 0;
    const turn = () => (++turns >= (plan.killAtTurn as number) ? die() : setImmediate(turn));
    setImmediate(turn);
  }
  const created = await service.submitBatch({ accountId: account.id }, plan.submit);
  process.stdout.write(`${JSON.stringify({ id: created.id })}\n`);
} else {
  await service.start();
}
await service.batchWork.idle();
process.stdout.write(`${JSON.stringify({ idle: true })}\n`);
await service.stop();
await sqlite.close();
