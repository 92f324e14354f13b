import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAddress, type ParsedAddress } from '../../src/address/parse.js';
import type { AddressFacts } from '../../src/checks/checker.js';
import { slipsOf } from '../../bench/typo-corpus.js';
import { disposable } from '../../src/checks/disposable.js';
import { DomainSet } from '../../src/checks/domain-set.js';
import { adjacent, createTypoSuggester, slipOf, typo } from '../../src/checks/typo.js';
import { DISPOSABLE_DOMAINS } from '../../src/data/disposable.js';
import { FREE_PROVIDER_DOMAINS } from '../../src/data/generated/lists.js';
import { COMPANY_DOMAINS, RANKED_MAIL_DOMAINS } from '../../src/data/generated/typo-lists.js';
import { createEngine } from '../../src/compose/engine.js';
import { createMemoryDns, createMemorySmtp } from '../../src/testing.js';
import { verifyCommand } from '../../src/cli/commands/verify.js';
import { csvFormat, recordOf } from '../../src/cli/records.js';
import { toDetailed, toShapeB } from '../../src/format/shapes.js';
import { PassThrough } from 'node:stream';
import { fcParams } from '../helpers/fast-check.js';
// @ts-expect-error: a plain .mjs build script without type declarations
import { disposableSources } from '../../scripts/compile-lists.mjs';

const suggest = createTypoSuggester();
/** The maintained burner lists as their packages ship them, before the build leaves out any. */
const DISPOSABLE_SOURCES = (disposableSources as () => { domains: string[] }[])().map(
  (source) => new DomainSet(source.domains.map((entry) => entry.trim().toLowerCase())),
);
const KNOWN = [...RANKED_MAIL_DOMAINS, ...FREE_PROVIDER_DOMAINS, ...COMPANY_DOMAINS];

function facts(address: string): AddressFacts {
  const parsed = parseAddress(address);
  if (!parsed.ok) throw new Error(`${address}: ${parsed.code}`);
  return { input: address, parsed: parsed as ParsedAddress };
}

describe('typo suggestions', () => {
  it.each([
    ['gmial.com', 'gmail.com'],
    ['gmai.com', 'gmail.com'],
    ['gmail.con', 'gmail.com'],
    ['hotmal.com', 'hotmail.com'],
    ['yahooo.com', 'yahoo.com'],
    ['outlok.com', 'outlook.com'],
    ['icloud.co', 'icloud.com'],
    ['gmx.nte', 'gmx.net'],
    ['gmaill.com', 'gmail.com'],
    ['gnail.com', 'gmail.com'],
    ['hotmial.con', 'hotmail.com'],
    ['yahoo.co', 'yahoo.com'],
    ['hotmail.co.ik', 'hotmail.co.uk'],
    ['qq.con', 'qq.com'],
  ])('%s -> %s', (typed, meant) => {
    expect(suggest(typed)).toBe(meant);
  });

  it.each([
    // Real domains one keystroke from a well-known one.
    'gmx.com',
    'gmx.de',
    'mail.com',
    'ymail.com',
    'live.com',
    'love.com',
    'hotmail.de',
    'yahoo.de',
    'gmc.com',
    'yeah.net',
    // Unknown domains nowhere near one, and short names past their suffix.
    'acme.io',
    'example.com',
    'aon.com',
    'gmo.com',
    'lve.com',
    'a.b.c.d',
  ])('%s gets no suggestion', (domain) => {
    expect(suggest(domain)).toBeNull();
  });

  it('never calls a listed free provider, company or disposable domain a typo of another', () => {
    for (const domain of [...FREE_PROVIDER_DOMAINS, ...COMPANY_DOMAINS]) {
      expect(suggest(domain), domain).toBeNull();
    }
    // Disposable domains may be typo-squats (gmial.com is on two lists): those get one, and
    // it is always a slip of the suggestion.
    const sample = ['mailinator.com', 'guerrillamail.com', '10minutemail.com', 'yopmail.com'];
    for (const domain of sample) {
      expect(DISPOSABLE_DOMAINS().has(domain)).toBe(true);
      expect(suggest(domain), domain).toBeNull();
    }
  });

  it('reads slips the way fingers make them on a QWERTY keyboard', () => {
    expect(adjacent('m', 'n')).toBe(true);
    expect(adjacent('q', 'a')).toBe(true);
    expect(adjacent('g', 'm')).toBe(false);
    expect(slipOf('gmail', 'gmail')).toBe(0);
    expect(slipOf('gmal', 'gmail')).not.toBe(-1);
    expect(slipOf('gmaol', 'gmail')).not.toBe(-1);
    // x is nowhere near i: not a slip.
    expect(slipOf('gmaxl', 'gmail')).toBe(-1);
    expect(slipOf('gmial', 'gmail')).not.toBe(-1);
    expect(slipOf('gmaail', 'gmail')).not.toBe(-1);
    expect(slipOf('gmxail', 'gmail')).toBe(-1);
  });

  it('property: a known-good domain never gets a suggestion', () => {
    fc.assert(
      fc.property(fc.constantFrom(...KNOWN), (domain) => suggest(domain) === null),
      fcParams(),
    );
  });

  it('property: a suggestion is always a domain of the ranked list, never the input', () => {
    const ranked = new Set(RANKED_MAIL_DOMAINS);
    const letters = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-.');
    const edited = fc
      .tuple(fc.constantFrom(...RANKED_MAIL_DOMAINS), fc.nat(), letters, fc.nat(3))
      .map(([domain, at, letter, kind]) => {
        const i = at % domain.length;
        if (kind === 0) return domain.slice(0, i) + domain.slice(i + 1);
        if (kind === 1) return domain.slice(0, i) + letter + domain.slice(i);
        if (kind === 2) return domain.slice(0, i) + letter + domain.slice(i + 1);
        return domain.slice(0, i) + (domain[i + 1] ?? '') + domain[i] + domain.slice(i + 2);
      });
    fc.assert(
      fc.property(fc.oneof(edited, fc.domain()), (domain) => {
        const suggestion = suggest(domain);
        return suggestion === null || (ranked.has(suggestion) && suggestion !== domain);
      }),
      fcParams(),
    );
  });

  it('takes its lists injected', () => {
    const own = createTypoSuggester({ ranked: ['acme-mail.com'], known: ['acme-mall.com'] });
    expect(own('acme-mial.com')).toBe('acme-mail.com');
    expect(own('acme-mall.com')).toBeNull();
    expect(own('gmial.com')).toBeNull();
  });
});

describe('typo checker', () => {
  it('raises possible_typo and records the address meant, local part kept', () => {
    const f = facts('Ann.Lee+news@gmial.com');
    expect(typo().run(f, { dns: undefined as never })).toMatchObject({
      check: 'typo',
      status: 'risky',
      code: 'possible_typo',
      factor: 'possible_typo',
    });
    expect(f.didYouMean).toBe('Ann.Lee+news@gmail.com');
  });

  it('passes a well-known domain and records nothing', () => {
    const f = facts('ann@gmail.com');
    expect(typo().run(f, { dns: undefined as never })).toMatchObject({ status: 'pass' });
    expect(f.didYouMean).toBeUndefined();
  });
});

describe('did_you_mean in verdicts', () => {
  const engine = createEngine({ offline: true });

  it('lowers the score without deciding the state (standard)', () => {
    const typoed = engine.verifySync('ann@hotmial.com');
    expect(typoed.didYouMean).toBe('ann@hotmail.com');
    expect(typoed.riskFactors).toEqual(['possible_typo']);
    // hotmial.com is on a burner list, yet a typo first: not disposable, and still deliverable.
    expect([typoed.state, typoed.disposable]).toEqual(['deliverable', false]);
    expect(typoed.score).toBeLessThan(engine.verifySync('ann@hotmail.com').score);
    const plain = engine.verifySync('ann@gmal.com');
    expect(plain.didYouMean).toBe('ann@gmail.com');
    expect(toDetailed(plain).did_you_mean).toBe('ann@gmail.com');
    expect(toShapeB(plain).did_you_mean).toBe('ann@gmail.com');
  });

  it('suggests even when the slip makes the domain undeliverable (an unknown TLD)', () => {
    const verdict = engine.verifySync('ann@gmail.con');
    expect(verdict).toMatchObject({
      state: 'undeliverable',
      reason: 'invalid_domain',
      didYouMean: 'ann@gmail.com',
    });
  });

  it('is null when nothing is suggested, and quick runs no typo check', () => {
    expect(engine.verifySync('ann@gmail.com').didYouMean).toBeNull();
    const quick = engine.verifySync('ann@gmial.com', { method: 'quick' });
    expect(quick.didYouMean).toBeNull();
    expect(quick.checks.map((c) => c.check)).not.toContain('typo');
    expect(toDetailed(engine.verifySync('x')).did_you_mean).toBeNull();
  });
});

describe('a typo is a typo first: a domain the typo check corrects is never disposable', () => {
  const real = new Set(KNOWN);
  /** Every single slip of the name or of the suffix of every ranked mail domain. */
  const slips = new Set<string>();
  for (const domain of RANKED_MAIL_DOMAINS) {
    const dot = domain.indexOf('.');
    const [name, suffix] = [domain.slice(0, dot), domain.slice(dot + 1)];
    for (const slip of slipsOf(name).keys()) slips.add(`${slip}.${suffix}`);
    for (const slip of slipsOf(suffix).keys()) slips.add(`${name}.${slip}`);
  }
  // The typo-squats: the slips the typo check identifies (a slip that is a real domain, or
  // that the short-name rules leave alone, is no typo to report).
  // `hotmail.f4` is no address at all (a TLD ends in a letter): the syntax check answers it.
  const squats = [...slips].filter(
    (domain) => !real.has(domain) && suggest(domain) !== null && parseAddress(`ann@${domain}`).ok,
  );
  const listed = (domain: string) => DISPOSABLE_SOURCES.some((list) => list.has(domain));

  it('covers the slips the README names, and the burner lists hold hundreds of them', () => {
    expect(squats).toEqual(
      expect.arrayContaining(['gmial.com', 'gmai.com', 'hotmal.com', 'yahooo.com', 'outlok.com']),
    );
    expect(squats.length).toBeGreaterThan(15_000);
    expect(squats.filter(listed).length).toBeGreaterThan(200);
  });

  it.each([
    ['the maintained lists', undefined],
    ['a list of the host holding every squat', () => disposable({ list: new DomainSet(squats) })],
  ])('with %s: did_you_mean set and disposable false, standard and quick', (_n, makeChecker) => {
    const checker = makeChecker?.();
    const engine = createEngine({
      offline: true,
      ...(checker === undefined ? {} : { checkers: { disposable: checker } }),
    });
    for (const domain of squats) {
      const address = `ann@${domain}`;
      const standard = engine.verifySync(address);
      const ran = standard.checks.some((finding) => finding.check === 'disposable');
      expect([address, standard.didYouMean, standard.disposable, standard.riskFactors]).toEqual([
        address,
        `ann@${suggest(domain)}`,
        ran ? false : null,
        ['possible_typo'],
      ]);
      const quick = engine.verifySync(address, { method: 'quick' });
      expect([address, quick.disposable, quick.riskFactors]).toEqual([
        address,
        ran ? false : null,
        [],
      ]);
    }
  });

  it('holds in the smtp method too, whatever the mailbox answers', async () => {
    const engine = createEngine({
      dns: createMemoryDns({ 'gmial.com': ['mx.gmial.com'] }),
      smtp: createMemorySmtp({ mailboxes: { 'ann@gmial.com': 'accepted' } }),
      checkers: { disposable: disposable({ list: new DomainSet(['gmial.com']) }) },
    });
    const verdict = await engine.verify('ann@gmial.com', { method: 'smtp' });
    expect([verdict.didYouMean, verdict.disposable]).toEqual(['ann@gmail.com', false]);
    expect(verdict.riskFactors).toContain('possible_typo');
    expect(verdict.riskFactors).not.toContain('disposable');
  });

  it('follows the typo check that ran (standard), and a suggester given to the checker (quick)', () => {
    const list = new DomainSet(['acme-mial.com', 'gmial.com', 'mailinator.com']);
    const own = createTypoSuggester({ ranked: ['acme-mail.com'] });
    const engine = createEngine({
      offline: true,
      checkers: { typo: typo(own), disposable: disposable({ list, typo: own }) },
    });
    const standard = engine.verifySync('ann@acme-mial.com');
    expect([standard.didYouMean, standard.disposable]).toEqual(['ann@acme-mail.com', false]);
    expect(engine.verifySync('ann@acme-mial.com', { method: 'quick' }).disposable).toBe(false);
    // A slip under a listed parent: the maintained list names xo.uk, a burner service.
    expect(DISPOSABLE_DOMAINS().has('xo.uk')).toBe(true);
    const maintained = createEngine({ offline: true });
    expect(maintained.verifySync('ann@hotmail.xo.uk', { method: 'quick' }).disposable).toBe(false);
    expect(maintained.verifySync('ann@box.xo.uk', { method: 'quick' }).disposable).toBe(true);
    // Not a slip of anything the host's suggester knows: the host's list decides.
    expect(engine.verifySync('ann@gmial.com', { method: 'quick' }).disposable).toBe(true);
    expect(engine.verifySync('ann@mailinator.com').disposable).toBe(true);
  });
});

describe('did_you_mean in the CLI', () => {
  it('is a field of records (NDJSON, CSV) and ends the table DETAILS', async () => {
    const verdict = createEngine({ offline: true }).verifySync('ann@gmial.com');
    expect(recordOf(verdict, 1).did_you_mean).toBe('ann@gmail.com');
    const csv = csvFormat();
    expect(csv.header).toContain('did_you_mean');
    expect(csv.line(recordOf(verdict, 1))).toContain('ann@gmail.com');

    const stdout = new PassThrough();
    let text = '';
    stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const io = {
      stdout,
      stderr: new PassThrough(),
      stdin: new PassThrough(),
      onInterrupt: () => () => {},
    };
    await verifyCommand(
      ['ann@gmial.com', 'bob@example.org'],
      { offline: true, method: 'standard' },
      io,
    );
    expect(text).toMatch(/ann@gmial\.com.*did you mean ann@gmail\.com\?/);
    expect(text).not.toMatch(/bob@example\.org.*did you mean/);
  });
});

describe('typo suggestions for short numeric names', () => {
  const suggest = createTypoSuggester();

  // A name of three or four characters takes a neighbour key only as "a digit struck for a
  // letter" (ao1 for aol, typo.ts nameAllows). Digit for digit was taken too, so numeric
  // domains, each a different real site (162.com, 127.com, 263.com: 263 Network's), were
  // "corrected" to NetEase's 163.com and 126.com.
  it.each(['162.com', '164.com', '127.com', '125.com', '263.com'])('%s is left alone', (domain) => {
    expect(suggest(domain)).toBeNull();
  });

  it('still suggests for a digit struck for a letter, and for slips of the suffix', () => {
    expect(suggest('a0l.com')).toBe('aol.com');
    expect(suggest('163.con')).toBe('163.com');
    expect(suggest('gmial.com')).toBe('gmail.com');
    expect(suggest('hotmial.con')).toBe('hotmail.com');
    expect(suggest('yahooo.com')).toBe('yahoo.com');
    expect(suggest('gmx.de')).toBeNull();
    expect(suggest('mail.com')).toBeNull();
  });
});
