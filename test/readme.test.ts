import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createEngine, parseAddress, SMTP_FINDINGS, type ProbeClass } from '../src/index.js';
import { DISPOSABLE_COUNT } from '../src/data/generated/disposable.js';
import { createService } from '../src/compose/service.js';
import { createMemoryStore } from '../src/store/memory-store.js';
import { createManualClock, createMemoryDns, createMemorySmtp } from '../src/testing.js';

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

  it('the quick start table is what the CLI prints for the command shown', async () => {
    const { main } = await import('../src/cli/main.js');
    const { PassThrough, Readable } = await import('node:stream');
    const command = /npm run mailverdict -- (verify .*)$/m.exec(README)?.[1] ?? '';
    // The shell's words: quoted or bare, none holding a space.
    const words = [...command.matchAll(/"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2]);
    expect(words).toContain('ann@gmial.com');
    const stdout = new PassThrough();
    let printed = '';
    stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    await main(words as string[], {
      stdout,
      stderr: new PassThrough(),
      stdin: Readable.from([]),
      onInterrupt: () => () => {},
    });
    const table = printed.trim().split('\n');
    expect(table).toHaveLength(words.filter((word) => word?.includes('@')).length + 1);
    for (const line of table) expect(README).toContain(`\n${line}\n`);
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
