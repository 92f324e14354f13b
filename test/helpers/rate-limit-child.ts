// A second process on the same SQLite file: authenticates `count` requests at once with one
// key and prints how many were admitted. Run by test/integration/sqlite-service.test.ts.
import { createEngine } from '../../src/compose/engine.js';
import { createService } from '../../src/compose/service.js';
import { createSqliteStore } from '../../src/sqlite.js';

const [path, secret, count] = process.argv.slice(2) as [string, string, string];
const store = createSqliteStore(path);
const service = createService({ engine: createEngine({ offline: true }), store });
// Wait for the parent's go, so that both processes hit the file at the same moment.
process.stdin.once('data', async () => {
  const outcomes = await Promise.allSettled(
    Array.from({ length: Number(count) }, () =>
      service.authenticate({ apiKey: secret, endpoint: 'verify' }),
    ),
  );
  const admitted = outcomes.filter((o) => o.status === 'fulfilled').length;
  const refusals = outcomes.flatMap((o) =>
    o.status === 'rejected' ? [(o.reason as { code?: string }).code] : [],
  );
  process.stdout.write(JSON.stringify({ admitted, refusals }));
  await store.close();
  process.exit(0);
});
process.stdout.write('ready\n');
