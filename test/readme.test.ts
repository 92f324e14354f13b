import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, parseAddress, SMTP_FINDINGS, type ProbeClass } from '../src/index.js';
import { DISPOSABLE_COUNT } from '../src/data/generated/disposable.js';
import { createService } from '../src/compose/service.js';
import { createMemoryStore } from '../src/store/memory-store.js';
import { createManualClock, createMemoryDns, createMemorySmtp } from '../src/testing.js';
import { runShell, startProcess, startServe, type CliProcess } from './helpers/cli.js';
import { freePort } from './helpers/ports.js';
import { pause } from './helpers/waiting.js';
import {
  startWebhookReceiver,
  type WebhookAnswer,
  type WebhookHit,
} from './helpers/webhook-receiver.js';
import { blockAfter, commandKey, readmeCommands } from './helpers/readme.js';
import { redisAvailable } from './helpers/redis-server.js';

/**
 * What the README says a verdict looks like is what the engine answers: its examples run here
 * with a memory Dns holding the records the README assumes (gmail.com's real MX hosts).
 */
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README examples', () => {
  it("the library example: Jane.Doe@Gmail.com with gmail.com's real MX records", async () => {
    expect(README).toContain("engine.verify('Jane.Doe@Gmail.com', { method: 'standard' })");
    const engine = createEngine({
      dns: createMemoryDns({
        'gmail.com': ['gmail-smtp-in.l.google.com', 'alt1.gmail-smtp-in.l.google.com'],
      }),
    });
    const verdict = await engine.verify('Jane.Doe@Gmail.com', { method: 'standard' });
    expect(verdict).toMatchObject({
      email: 'Jane.Doe@gmail.com',
      state: 'deliverable',
      reason: 'accepted_email',
      score: 93,
      riskFactors: ['free'],
      mxRecord: 'gmail-smtp-in.l.google.com',
      smtpProvider: 'google',
      free: true,
      role: false,
      didYouMean: null,
    });
    expect(README).toMatch(
      /score: 93,\s+\/\/\s+riskFactors: \['free'\], mxRecord: 'gmail-smtp-in\.l\.google\.com'/,
    );
  });

  it('the testing example: an injected DNS failure is reached, and answered as a timeout', async () => {
    const dns = createMemoryDns({
      'example.org': ['mx1.example.org', 'mx2.example.org'],
      'down.example.org': { kind: 'failure', code: 'timeout' },
    });
    const engine = createEngine({ dns });
    expect((await engine.verify('ann@example.org')).state).toBe('deliverable');
    expect((await engine.verify('ann@down.example.org')).reason).toBe('timeout');
    expect(dns.queries).toEqual(['example.org', 'down.example.org']);
    expect(README).toContain("(await engine.verify('ann@down.example.org')).reason; // 'timeout'");
  });

  it('the manual clock example: a rotated key stops working once the clock passes its grace', async () => {
    expect(README).toContain('const clock = createManualClock(Date.UTC(2026, 0, 1));');
    expect(README).toContain('clock.advance(3_600_000); // the grace period is over');
    const clock = createManualClock(Date.UTC(2026, 0, 1));
    const service = createService({
      engine: createEngine({ offline: true, clock }),
      store: createMemoryStore(),
      clock,
    });
    const account = await service.admin.createAccount({ email: 'ops@example.org', credits: 10 });
    const { secret, key } = await service.admin.createKey(account.id);
    await service.admin.rotateKey(account.id, key.id, { graceSeconds: 3600 });
    const presented = { authorization: `Bearer ${secret}`, endpoint: 'verify' } as const;
    await expect(service.authenticate(presented)).resolves.toMatchObject({ accountId: account.id });
    clock.advance(3_600_000);
    await expect(service.authenticate(presented)).rejects.toMatchObject({
      code: 'unauthorized',
      status: 401,
    });
  });

  it('the did-you-mean table: what an offline engine answers, standard then quick', () => {
    const engine = createEngine({ offline: true });
    const section = README.slice(README.indexOf('| address '));
    const rows = section
      .slice(0, section.indexOf('\n\n'))
      .split('\n')
      .filter((line) => line.startsWith('| `'));
    expect(rows.length).toBeGreaterThanOrEqual(10);
    // A cell's first code span, read as the JavaScript literal it shows.
    const literal = (cell: string | undefined): unknown => {
      const code = /`([^`]*)`/.exec(cell ?? '')?.[1] ?? (cell ?? '').trim();
      return JSON.parse(code.replaceAll("'", '"'));
    };
    for (const row of rows) {
      const [, address, didYouMean, state, score, factors, disposable, quick] = row.split('|');
      const typed = /`([^`]+)`/.exec(address ?? '')?.[1] as string;
      const standard = engine.verifySync(typed);
      expect(
        {
          typed,
          didYouMean: standard.didYouMean,
          state: standard.state,
          score: standard.score,
          riskFactors: standard.riskFactors,
          disposable: standard.disposable,
          quick: engine.verifySync(typed, { method: 'quick' }).disposable,
        },
        row,
      ).toEqual({
        typed,
        didYouMean: literal(didYouMean),
        state: literal(state),
        score: literal(score),
        riskFactors: literal(factors),
        disposable: literal(disposable),
        quick: literal(quick),
      });
    }
    // The five slips the README names first, and the one of its introduction.
    for (const typed of ['gmial.com', 'gmai.com', 'hotmal.com', 'yahooo.com', 'outlok.com']) {
      expect(
        rows.some((row) => row.includes(`\`ann@${typed}\``)),
        typed,
      ).toBe(true);
    }
    expect(README).toContain('(`did_you_mean`: `ann@gmial.com` -> `ann@gmail.com`)');
    expect(engine.verifySync('ann@gmial.com').didYouMean).toBe('ann@gmail.com');
  });

  it('the Data section counts the merged disposable list and the typo-squats left out', () => {
    const generated = readFileSync(
      new URL('../src/data/generated/disposable.ts', import.meta.url),
      'utf8',
    );
    const squats = /^\/\/ (\d+) typo-squats the typo check corrects/m.exec(generated)?.[1];
    expect(README).toMatch(
      new RegExp(`typo-squat\\s+the typo check corrects \\(${squats} of them`),
    );
    expect(README).toContain(`The merged list of ${DISPOSABLE_COUNT.toLocaleString('en')}`);
  });

  it('the SMTP outcome table: the names the twin takes, their findings and real verdicts', async () => {
    const section = README.slice(README.indexOf('What each outcome means'));
    const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| outcome')));
    const rows = table
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .map((line) => line.split('|').map((cell) => cell.trim()));
    const codes = (cell: string) => [...cell.matchAll(/`(\w+)`/g)].map((match) => match[1]);
    const outcomes = rows.map(([, outcome]) => codes(outcome ?? '')[0]);
    expect([...outcomes].sort()).toEqual(Object.keys(SMTP_FINDINGS).sort());
    const verdictOf = async (smtp: ReturnType<typeof createMemorySmtp>) =>
      createEngine({ dns: createMemoryDns({ 'example.org': ['mx.example.org'] }), smtp }).verify(
        'ann@example.org',
        { method: 'smtp' },
      );
    for (const [, cell, , finding, verdict] of rows) {
      const outcome = codes(cell ?? '')[0] as ProbeClass;
      expect(codes(finding ?? ''), outcome).toEqual([SMTP_FINDINGS[outcome].code]);
      const real = await verdictOf(createMemorySmtp({ mailboxes: { 'ann@example.org': outcome } }));
      const [reason, ...factors] = codes(verdict ?? '');
      expect([real.state, real.reason], outcome).toEqual([verdict?.split(' ')[0], reason]);
      expect(real.riskFactors, outcome).toEqual(expect.arrayContaining(factors));
    }
    const catchAll =
      /catch-all \(the\s+twin's `catchAllDomains`\): finding `(\w+)`, (\w+) `(\w+)`, `(\w+)`/;
    const [, code, state, reason, factor] = catchAll.exec(README) ?? [];
    const real = await verdictOf(createMemorySmtp({ catchAllDomains: ['example.org'] }));
    expect(real.checks.find((finding) => finding.check === 'catch_all')?.code).toBe(code);
    expect([real.state, real.reason, real.riskFactors]).toEqual([state, reason, [factor]]);
  });

  it('the allowDomainJoiners row: its examples as each profile parses them', () => {
    const row = README.split('\n').find((line) => line.startsWith('| `allowDomainJoiners`'));
    const examples = [...(row ?? '').matchAll(/`(user@[^`]+)`/g)].map((match) => match[1]);
    expect(examples).toHaveLength(2);
    for (const address of examples as string[]) {
      expect(address).toMatch(/[\u200c\u200d]/);
      expect(parseAddress(address)).toMatchObject({ ok: false, code: 'unsafe_character' });
      expect(parseAddress(address, { profile: 'rfc' }).ok).toBe(true);
    }
  });
});

/**
 * Every shell command the README shows runs as written, here or in CI, or the table below
 * says why it cannot. A command is run in a temp dir, by bash, with these substitutions, each
 * made in the open by `substitute` and listed beside the command:
 * - `mailverdict` is the clone's CLI from source (a shim first on PATH), which is what the
 *   package file installs (the Install test installs one and runs it too); `npx mailverdict`
 *   is the installed package's, in the project the Install test made;
 * - ports become 0 (any free one) and `--host 0.0.0.0` becomes 127.0.0.1: several tests share
 *   this machine, and nothing here listens beyond loopback;
 * - servers the README assumes (`serve` on 127.0.0.1:8080, Redis at 10.0.0.5:6379) are
 *   started by the test, and their real URLs and the key they print replace the README's;
 * - processes that would ask DNS run `--offline`: no query leaves this machine;
 * - a `serve` that delivers webhooks to the test's receiver, on loopback, runs
 *   `--allow-private-networks`;
 * - the files a command reads (`list.txt`, `list.csv`) are written by the test first.
 */
type Handling = { readonly run: string } | { readonly ci: string } | { readonly not: string };

/** How each command of the README is held to what it says, by its text (commandKey). */
const HANDLING: ReadonlyMap<string, Handling> = new Map<string, Handling>([
  [
    'npm ci && npm run --silent mailverdict -- verify --offline alice@example.org ann@gmial.com info@mailinator.com "bad..dots@example.com"',
    { run: 'quick start' },
  ],
  ['npm test', { ci: 'npm test' }],
  ['npm ci', { ci: 'npm ci' }],
  ['sudo bash scripts/fetch-test-mtas.sh', { ci: 'bash scripts/fetch-test-mtas.sh' }],
  ['npm pack', { run: 'install' }],
  ['mkdir ../my-app && cd ../my-app && npm init -y >/dev/null', { run: 'install' }],
  ['npm install ../mailverdict/mailverdict-0.1.0.tgz', { run: 'install' }],
  ['npx mailverdict verify --offline ann@gmial.com', { run: 'install' }],
  ['npm run build', { ci: 'npm run build' }],
  ['node -e 0', { run: 'quick start' }],
  ['npm run --silent mailverdict -- verify --offline ann@example.org', { run: 'quick start' }],
  ['cat list.csv | mailverdict batch -', { run: 'through a server' }],
  ['mailverdict serve --db mailverdict.db', { run: 'admin' }],
  ['mailverdict keys create --name deploy', { run: 'admin' }],
  ['mailverdict keys create --public --trusted-domain shop.example.com', { run: 'admin' }],
  ['mailverdict keys list --json', { run: 'admin' }],
  ['mailverdict keys rotate key_... --grace 3600', { run: 'admin' }],
  ['mailverdict keys revoke key_...', { run: 'admin' }],
  ['mailverdict credits grant 5000 --note "invoice 42"', { run: 'admin' }],
  [
    'mailverdict filters add spam.example --type domain --action block --reason "complaints"',
    { run: 'admin' },
  ],
  ['mailverdict filters list --type domain --page 1 --json', { run: 'admin' }],
  ['mailverdict filters rm flt_...', { run: 'admin' }],
  ['mailverdict credits balance --json', { run: 'admin' }],
  ['mailverdict credits ledger --limit 20', { run: 'admin' }],
  ['mailverdict webhooks list --failed', { run: 'admin' }],
  ['mailverdict webhooks redeliver batch_...', { run: 'admin' }],
  ['mailverdict webhooks secret', { run: 'admin' }],
  ['mailverdict webhooks rotate', { run: 'admin' }],
  [
    'export MAILVERDICT_WEBHOOK_SECRET=$(mailverdict webhooks secret --db mailverdict.db)',
    { run: 'admin' },
  ],
  [
    'mailverdict accounts create --email billing@example.com --plan starter --credits 500',
    { run: 'admin' },
  ],
  ['mailverdict accounts list', { run: 'admin' }],
  ['mailverdict accounts plan professional --account acct_...', { run: 'admin' }],
  ['mailverdict keys create --account acct_...', { run: 'admin' }],
  ['npm run bench', { ci: 'npm run bench' }],
  ['export MAILVERDICT_SERVER=http://127.0.0.1:8080', { run: 'through a server' }],
  ['export MAILVERDICT_API_KEY=mv_sk_...', { run: 'through a server' }],
  ['mailverdict verify ann@example.org info@mailinator.com', { run: 'through a server' }],
  ['mailverdict batch list.txt > results.ndjson', { run: 'through a server' }],
  [
    'mailverdict batch --server http://127.0.0.1:8080 --api-key "$MAILVERDICT_API_KEY" -o csv list.csv > results.csv',
    { run: 'through a server' },
  ],
  [
    'redis-server --appendonly yes --appendfsync always --maxmemory-policy noeviction',
    { run: 'at scale' },
  ],
  ['npm install ../mailverdict/mailverdict-0.1.0.tgz ioredis@5 bullmq@5', { run: 'at scale' }],
  [
    'npx mailverdict serve --redis redis://10.0.0.5:6379 --host 0.0.0.0 --base-url https://api.example.com/',
    { run: 'at scale' },
  ],
  [
    'npx mailverdict worker --redis redis://10.0.0.5:6379 --smtp-per-host 2 --port 9090',
    { run: 'at scale' },
  ],
  [
    'docker compose -f deploy/compose.yaml up',
    {
      not: 'no Docker daemon here or in CI: the at-scale test runs the serve and worker commands of deploy/compose.yaml against a local Redis instead',
    },
  ],
  [
    'npm run data',
    {
      not: 'it rewrites src/data/generated/ under the tests that read it; test/data/*.test.ts hold those files to their sources (a stale one fails)',
    },
  ],
  ['FC_SEED=123 npm test', { ci: 'npm test' }],
  ['npm run lint', { ci: 'npm run lint' }],
  ['npm run format:check', { ci: 'npm run format:check' }],
  ['npx tsx bench/typo.ts', { ci: 'npm run bench' }],
  ['npx tsx bench/scale.ts', { ci: 'npm run bench' }],
  ['npx tsx bench/filter-batch.ts', { ci: 'npm run bench' }],
  ['npx tsx bench/availability.ts', { ci: 'npm run bench' }],
]);

const REPO = fileURLToPath(new URL('..', import.meta.url));
const COMMANDS = readmeCommands(README);
/** The commands the tests below ran, by key: the last test checks that each was. */
const ran = new Set<string>();
/** Scenarios skipped with a notice (no redis-server here; CI requires it). */
const skipped = new Set<string>();

/**
 * The README's command `shown`, after the substitutions `[from, to]` (each one must apply:
 * the README still says what the test replaces), marked as run.
 */
function substitute(shown: string, ...substitutions: [string | RegExp, string][]): string {
  const key = commandKey(shown);
  expect(
    COMMANDS.some((command) => commandKey(command.text) === key),
    `the README shows ${shown}`,
  ).toBe(true);
  ran.add(key);
  let command = key;
  for (const [from, to] of substitutions) {
    const next = command.replace(from, to);
    expect(next, `${String(from)} in ${command}`).not.toBe(command);
    command = next;
  }
  return command;
}

/** A directory with a `mailverdict` that runs the clone's CLI from source, for PATH. */
function cliShim(dir: string): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const tsx = createRequire(import.meta.url).resolve('tsx');
  const cli = join(REPO, 'src/cli/bin.ts');
  writeFileSync(
    join(bin, 'mailverdict'),
    `#!/bin/sh\nexec '${process.execPath}' --import '${pathToFileURL(tsx).href}' '${cli}' "$@"\n`,
  );
  chmodSync(join(bin, 'mailverdict'), 0o755);
  return `${bin}:${process.env.PATH ?? ''}`;
}

/** A long-running README command, by bash, in its own process group (see startProcess). */
function startLine(line: string, cwd: string, env: Record<string, string> = {}) {
  return startProcess('bash', ['-c', line], { cwd, env, group: true });
}

/** The key a first start prints on stdout, and the address it listens on. */
async function keyAndUrl(server: CliProcess): Promise<{ key: string; url: string }> {
  const [, url] = await server.waitFor(/Listening on (http:\/\/\S+) /, 120_000);
  const [key] = await server.waitFor(/mv_sk_\w+/);
  return { key, url: url as string };
}

describe('README shell commands', () => {
  it('every command it shows is run here, run by CI (.ci/run), or says why it cannot run', () => {
    const keys = COMMANDS.map((command) => commandKey(command.text));
    const unhandled = COMMANDS.filter((command) => !HANDLING.has(commandKey(command.text)));
    expect(unhandled, 'commands of the README that no test runs').toEqual([]);
    expect(
      [...HANDLING.keys()].filter((key) => !keys.includes(key)),
      'gone from the README',
    ).toEqual([]);
    const ci = readFileSync(join(REPO, '.ci/run'), 'utf8').split('\n');
    for (const [key, handling] of HANDLING) {
      if ('ci' in handling) {
        const line = ci.find((text) => text === handling.ci || text.startsWith(`${handling.ci} `));
        expect(line, key).toBeDefined();
      }
    }
    // What `npm run bench` runs, and what FC_SEED sets.
    const bench = readFileSync(join(REPO, 'bench/run.ts'), 'utf8');
    for (const file of ['typo', 'scale', 'filter-batch', 'availability'])
      expect(bench).toContain(`'./${file}.js'`);
    const fastCheck = readFileSync(join(REPO, 'test/helpers/fast-check.ts'), 'utf8');
    expect(fastCheck).toContain('process.env.FC_SEED');
  });

  it('quick start, from the clone: npm run --silent prints only the table the README shows', async () => {
    // npm ci is CI's (.ci/run, on its fresh clone): this clone has its dependencies.
    const command = substitute(
      'npm ci && npm run --silent mailverdict -- verify --offline alice@example.org ann@gmial.com info@mailinator.com "bad..dots@example.com"',
      ['npm ci && ', ''],
    );
    const run = await runShell(command, { env: {} });
    expect(run.code, run.stderr).toBe(0);
    const table = blockAfter(README, 'The first prints a verdict per address:');
    expect(run.stdout).toBe(`${table.join('\n')}\n`);

    const one = await runShell(
      substitute('npm run --silent mailverdict -- verify --offline ann@example.org'),
    );
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/^ADDRESS\s+STATE[^\n]*\nann@example\.org\s+deliverable/);
    expect((await runShell(substitute('node -e 0'))).code).toBe(0);
  }, 120_000);

  describe('install from the package file, then at scale', () => {
    let work: string;
    beforeAll(() => {
      work = mkdtempSync(join(tmpdir(), 'mailverdict-readme-'));
    });
    afterAll(() => {
      rmSync(work, { recursive: true, force: true });
    });

    it('the Install block: npm pack in a clone, npm install of the file in a new project, npx mailverdict', async () => {
      // A clone: the repository's files, under the name the README's paths use. Its
      // dependencies are the repository's own (npm ci is CI's, on its fresh clone).
      const clone = join(work, 'mailverdict');
      const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], {
        cwd: REPO,
        encoding: 'utf8',
      })
        .split('\0')
        .filter((file) => file !== '' && existsSync(join(REPO, file)));
      for (const file of files) {
        mkdirSync(dirname(join(clone, file)), { recursive: true });
        copyFileSync(join(REPO, file), join(clone, file));
      }
      symlinkSync(join(REPO, 'node_modules'), join(clone, 'node_modules'));
      const script = [
        'set -e',
        substitute('npm pack'),
        substitute('mkdir ../my-app && cd ../my-app && npm init -y >/dev/null'),
        substitute('npm install ../mailverdict/mailverdict-0.1.0.tgz'),
        substitute('npx mailverdict verify --offline ann@gmial.com'),
      ];
      const run = await runShell(script.join('\n'), { cwd: clone });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(
        /ann@gmial\.com\s+deliverable\s+80\s+accepted_email\s+possible_typo; did you mean ann@gmail\.com\?/,
      );
      // The package's own files, not the clone's: what a published version would hold.
      expect(existsSync(join(work, 'my-app/node_modules/mailverdict/dist/cli/bin.js'))).toBe(true);
      expect(existsSync(join(work, 'my-app/node_modules/mailverdict/src'))).toBe(false);
    }, 600_000);

    it("Running at scale: Redis, two API processes and two workers as shown, and compose.yaml's commands", async () => {
      const app = join(work, 'my-app');
      expect(existsSync(join(app, 'node_modules/.bin/mailverdict')), 'the Install test ran').toBe(
        true,
      );
      if (!redisAvailable()) {
        skipped.add('at scale');
        return;
      }
      const port = await freePort();
      const redis = startLine(
        substitute(
          'redis-server --appendonly yes --appendfsync always --maxmemory-policy noeviction',
          [/$/, ` --port ${port} --bind 127.0.0.1 --dir ${work}`],
        ),
        work,
      );
      const processes: CliProcess[] = [redis];
      try {
        await redis.waitFor(/Ready to accept connections/);
        const url = `redis://127.0.0.1:${port}`;
        const installed = await runShell(
          substitute('npm install ../mailverdict/mailverdict-0.1.0.tgz ioredis@5 bullmq@5'),
          { cwd: app },
        );
        expect(installed.code, installed.stderr).toBe(0);

        const onLoopback = (shown: string, ...more: [string | RegExp, string][]) =>
          substitute(shown, ['redis://10.0.0.5:6379', url], ...more, [/$/, ' --offline']);
        const serveLine = onLoopback(
          'npx mailverdict serve --redis redis://10.0.0.5:6379 --host 0.0.0.0 --base-url https://api.example.com/',
          ['--host 0.0.0.0', '--host 127.0.0.1 --port 0'],
        );
        const first = startLine(serveLine, app);
        processes.push(first);
        const { key, url: api } = await keyAndUrl(first);
        // The second starts on a Redis that has its account: it prints no key.
        const second = startLine(serveLine, app);
        processes.push(second);
        const [, other] = await second.waitFor(/Listening on (http:\/\/\S+) /, 120_000);
        const workerLine = onLoopback(
          'npx mailverdict worker --redis redis://10.0.0.5:6379 --smtp-per-host 2 --port 9090',
          ['--port 9090', '--port 0'],
        );
        for (let i = 0; i < 2; i++) {
          const worker = startLine(workerLine, app);
          processes.push(worker);
          await worker.waitFor(/Worker on .*: taking batch chunks/, 120_000);
        }

        // A batch submitted to one API process, verified by the workers, read from the other.
        const emails = ['ann@example.org', 'A@EXAMPLE.ORG', 'bad..dots@example.org'];
        const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
        const submitted = await fetch(`${api}/v1/verify`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ emails, method: 'quick' }),
        });
        expect(submitted.status).toBe(202);
        const { id } = (await submitted.json()) as { id: string };
        let status: { status: string; download_url?: string } = { status: 'processing' };
        for (let i = 0; i < 600 && status.status === 'processing'; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          status = (await (
            await fetch(`${other as string}/v1/verify/${id}`, { headers })
          ).json()) as typeof status;
        }
        expect(status.status).toBe('completed');
        expect(status.download_url).toBe(`https://api.example.com/v1/verify/${id}/results`);
        const results = (await (
          await fetch(`${other as string}/v1/verify/${id}/results`, { headers })
        ).json()) as { results: { input: string }[] };
        expect(results.results.map((record) => record.input)).toEqual(emails);

        // deploy/compose.yaml's API and worker commands, on the same Redis (see HANDLING for
        // why compose itself does not run): every flag they pass is one the CLI takes.
        const compose = readFileSync(join(REPO, 'deploy/compose.yaml'), 'utf8');
        for (const [name, ready] of [
          ['api', /Listening on /],
          ['worker', /Worker on /],
        ] as const) {
          const command = composeCommand(compose, name)
            .replace('redis://redis:6379', url)
            .replace('--host 0.0.0.0', '--host 127.0.0.1')
            .replace(/--port \d+/, '--port 0');
          const started = startLine(`npx mailverdict ${command} --offline`, app);
          processes.push(started);
          await started.waitFor(ready, 120_000);
          await started.stop();
        }
        // SIGTERM to each process group (a terminal's Ctrl-C, a service manager's stop) ends
        // every API process and worker: stop() waits until none of the group is left. Their
        // exit codes are npx's, which dies of the signal itself; the CLI's own are tested in
        // test/cli.
        for (const started of processes.slice(1)) await started.stop();
      } finally {
        for (const started of processes.reverse()) await started.stop();
      }
    }, 600_000);
  });

  it('the admin block: serve creates the account on the file, then each command works on it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailverdict-readme-admin-'));
    const env = { PATH: cliShim(dir) };
    // It runs through the block: the webhook commands need a server that delivers.
    const serve = startLine(
      substitute('mailverdict serve --db mailverdict.db', [
        /$/,
        ' --port 0 --offline --allow-private-networks',
      ]),
      dir,
      env,
    );
    // The receiver of a job's webhook: it answers 410 (gone: no more attempts), then 204.
    const answers: WebhookAnswer[] = [410];
    const receiver = await startWebhookReceiver(() => answers.shift() ?? 204);
    try {
      const { key, url } = await keyAndUrl(serve);
      const admin = async (shown: string, ...substitutions: [string, string][]) => {
        const run = await runShell(substitute(shown, ...substitutions), { cwd: dir, env });
        expect(run.code, `${shown}: ${run.stderr}`).toBe(0);
        return run.stdout;
      };
      expect(await admin('mailverdict keys create --name deploy')).toMatch(/^mv_sk_\w+\n$/);
      expect(
        await admin('mailverdict keys create --public --trusted-domain shop.example.com'),
      ).toMatch(/^mv_pk_\w+\n$/);
      const keys = (await admin('mailverdict keys list --json'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { id: string; name: string | null });
      const deploy = keys.find((found) => found.name === 'deploy')?.id as string;
      expect(deploy).toMatch(/^key_/);
      expect(
        await admin('mailverdict keys rotate key_... --grace 3600', ['key_...', deploy]),
      ).toMatch(/^mv_sk_\w+\n$/);
      await admin('mailverdict keys revoke key_...', ['key_...', deploy]);
      expect(await admin('mailverdict credits grant 5000 --note "invoice 42"')).toMatch(
        /available 6000/,
      );
      await admin(
        'mailverdict filters add spam.example --type domain --action block --reason "complaints"',
      );
      const page = JSON.parse(
        await admin('mailverdict filters list --type domain --page 1 --json'),
      ) as { filters: { id: string; value: string }[] };
      expect(page.filters.map((filter) => filter.value)).toEqual(['spam.example']);
      await admin('mailverdict filters rm flt_...', ['flt_...', page.filters[0]?.id as string]);
      expect(JSON.parse(await admin('mailverdict credits balance --json'))).toMatchObject({
        available: 6000,
        reserved: 0,
        used: 0,
        total: 6000,
      });
      expect(await admin('mailverdict credits ledger --limit 20')).toMatch(
        /\sgrant\s+5000\s+\+5000\s+\S+\s+invoice 42\n$/,
      );

      // A job whose webhook the receiver refuses for good; asked for again, it arrives.
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const submitted = await fetch(`${url}/v1/verify`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ emails: ['ann@example.org'], callback_url: receiver.url }),
      });
      const { id } = (await submitted.json()) as { id: string };
      const webhookOf = async () =>
        (
          (await (await fetch(`${url}/v1/verify/${id}`, { headers })).json()) as {
            webhook?: { status: string };
          }
        ).webhook;
      for (let i = 0; i < 300 && (await webhookOf())?.status !== 'failed'; i++) await pause(100);
      expect(await admin('mailverdict webhooks list --failed')).toMatch(
        new RegExp(`^${id}\\s+failed\\s+1\\s+410\\s`, 'm'),
      );
      expect(
        JSON.parse(await admin('mailverdict webhooks redeliver batch_...', ['batch_...', id])),
      ).toMatchObject({ id, webhook: { status: 'pending', attempts: 0 } });
      // Sent by the running serve, within its round.
      for (let i = 0; i < 300 && (await webhookOf())?.status !== 'delivered'; i++) await pause(100);
      expect(receiver.hits).toHaveLength(2);

      // The secret the Batch jobs section exports verifies what the receiver got.
      const exported = await runShell(
        [
          'set -e',
          substitute(
            'export MAILVERDICT_WEBHOOK_SECRET=$(mailverdict webhooks secret --db mailverdict.db)',
          ),
          'printf %s "$MAILVERDICT_WEBHOOK_SECRET"',
        ].join('\n'),
        { cwd: dir, env },
      );
      expect(exported.code, exported.stderr).toBe(0);
      const secret = exported.stdout;
      const delivery = receiver.hits[1] as WebhookHit;
      expect(
        new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>),
      ).toMatchObject({ event: 'batch.completed', id });
      expect(await admin('mailverdict webhooks secret')).toBe(`${secret}\n`);
      const rotated = (await admin('mailverdict webhooks rotate')).trim();
      expect(rotated).toMatch(/^whsec_/);
      expect(rotated).not.toBe(secret);

      const created = (
        await admin(
          'mailverdict accounts create --email billing@example.com --plan starter --credits 500',
        )
      ).trim();
      expect(created).toMatch(/^acct_\w+$/);
      expect(await admin('mailverdict accounts list')).toMatch(
        new RegExp(`^${created}\\s+billing@example\\.com\\s+starter\\s+500\\s+0\\s+0\\s`, 'm'),
      );
      expect(
        await admin('mailverdict accounts plan professional --account acct_...', [
          'acct_...',
          created,
        ]),
      ).toMatch(/professional plan/);
      expect(
        await admin('mailverdict keys create --account acct_...', ['acct_...', created]),
      ).toMatch(/^mv_sk_\w+\n$/);
    } finally {
      await receiver.close();
      expect(await serve.stop()).toBe(0);
    }
    rmSync(dir, { recursive: true, force: true });
  }, 300_000);

  it('the CLI through a server: the block as written against serve, and a CSV piped to batch', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailverdict-readme-server-'));
    const env = { PATH: cliShim(dir) };
    writeFileSync(join(dir, 'list.txt'), 'ann@example.org\nbad..dots@example.org\n');
    writeFileSync(join(dir, 'list.csv'), 'name,email\nAnn,ann@example.org\nBob,bob@example.org\n');
    const serve = startServe(join(dir, 'server.db'));
    const { url, key } = await serve;
    try {
      const at = (shown: string) => substitute(shown, ['http://127.0.0.1:8080', url]);
      const script = [
        'set -e',
        at('export MAILVERDICT_SERVER=http://127.0.0.1:8080'),
        substitute('export MAILVERDICT_API_KEY=mv_sk_...', ['mv_sk_...', key]),
        substitute('mailverdict verify ann@example.org info@mailinator.com'),
        substitute('mailverdict batch list.txt > results.ndjson'),
        at(
          'mailverdict batch --server http://127.0.0.1:8080 --api-key "$MAILVERDICT_API_KEY" -o csv list.csv > results.csv',
        ),
      ];
      const run = await runShell(script.join('\n'), { cwd: dir, env });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^ann@example\.org\s+deliverable/m);
      expect(run.stdout).toMatch(/^info@mailinator\.com\s+risky/m);
      const ndjson = readFileSync(join(dir, 'results.ndjson'), 'utf8').trim().split('\n');
      expect(ndjson.map((line) => (JSON.parse(line) as { index: number }).index)).toEqual([1, 2]);
      const csv = readFileSync(join(dir, 'results.csv'), 'utf8').trim().split('\n');
      expect(csv[0]).toMatch(/^index,input,email,/);
      expect(csv.slice(1).map((row) => row.split(',')[0])).toEqual(['2', '3']);

      // Through the same server: without one it would ask the system's DNS.
      const piped = await runShell(substitute('cat list.csv | mailverdict batch -'), {
        cwd: dir,
        env: { ...env, MAILVERDICT_SERVER: url, MAILVERDICT_API_KEY: key },
      });
      expect(piped.code, piped.stderr).toBe(0);
      expect(piped.stderr).toMatch(/reading standard input as CSV/);
      expect(
        piped.stdout
          .trim()
          .split('\n')
          .map((line) => (JSON.parse(line) as { input: string }).input),
      ).toEqual(['ann@example.org', 'bob@example.org']);
    } finally {
      expect(await serve.then((child) => child.stop())).toBe(0);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it('every command the table says the tests run, they ran', () => {
    const toRun = [...HANDLING]
      .filter(([, handling]) => 'run' in handling && !skipped.has(handling.run))
      .map(([key]) => key);
    expect(toRun.filter((key) => !ran.has(key))).toEqual([]);
  });
});

/** The `command:` of a compose.yaml service, its folded lines joined as YAML's `>` joins them. */
function composeCommand(compose: string, service: string): string {
  const from = compose.indexOf(`\n  ${service}:\n`);
  const at = compose.indexOf('    command: >\n', from);
  expect(from >= 0 && at >= 0, service).toBe(true);
  const lines: string[] = [];
  for (const line of compose.slice(at + '    command: >\n'.length).split('\n')) {
    if (!line.startsWith('      ')) break;
    lines.push(line.trim());
  }
  return lines.join(' ');
}
