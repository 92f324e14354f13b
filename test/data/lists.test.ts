import { readFileSync } from 'node:fs';
import { getPublicSuffix } from 'tldts';
import { describe, expect, it } from 'vitest';
import { parseAddress, type ParsedAddress } from '../../src/address/parse.js';
import { disposable } from '../../src/checks/disposable.js';
import { createTypoSuggester } from '../../src/checks/typo.js';
import { PackedDomainSet } from '../../src/checks/packed-domain-set.js';
import { DISPOSABLE_DOMAINS } from '../../src/data/disposable.js';
import { DISPOSABLE_COUNT, DISPOSABLE_PACKED } from '../../src/data/generated/disposable.js';
import { FREE_PROVIDER_DOMAINS } from '../../src/data/generated/lists.js';
import { createEngine } from '../../src/compose/engine.js';
import {
  compileDisposable,
  compileTypoLists,
  disposableSources,
  mergeDisposable,
  toALabel,
  // @ts-expect-error: a plain .mjs build script without type declarations
} from '../../scripts/compile-lists.mjs';
// @ts-expect-error: a plain .mjs build script without type declarations
import { readList } from '../../scripts/compile-data.mjs';

type Suggester = (domain: string) => string | null;

interface Source {
  name: string;
  version: string;
  domains: string[];
}

const generated = (name: string) =>
  readFileSync(new URL(`../../src/data/generated/${name}`, import.meta.url), 'utf8');
const free: string[] = (readList as (name: string) => string[])('free-providers.txt');
const allow: string[] = (readList as (name: string) => string[])('disposable-allow.txt');
const sources = (disposableSources as () => Source[])();
const aLabel = toALabel as (entry: string) => string | null;

function facts(domain: string) {
  const parsed = parseAddress(`ann@${domain}`, { globallyDeliverable: false });
  if (!parsed.ok) throw new Error(`${domain}: ${parsed.code}`);
  return { input: `ann@${domain}`, parsed: parsed as ParsedAddress };
}

function flagged(domain: string, check = disposable()): boolean {
  const finding = check.run(facts(domain), { dns: undefined as never });
  if (finding instanceof Promise) throw new Error('the disposable check did I/O');
  return finding.status === 'risky';
}

describe('compiled lists', () => {
  it('src/data/generated/{typo-lists,disposable}.ts are up to date (run `npm run data`)', () => {
    expect(generated('typo-lists.ts')).toBe((compileTypoLists as () => string)());
    expect(generated('disposable.ts')).toBe(
      (compileDisposable as (suggest: Suggester) => string)(createTypoSuggester()),
    );
  });

  it('the packed disposable list equals its sources, as A-labels, less the exclusions', () => {
    const suggest = createTypoSuggester();
    const { domains } = (mergeDisposable as (suggest: Suggester) => { domains: string[] })(suggest);
    const excluded = new Set([...free, ...allow]);
    const expected = new Set<string>();
    for (const source of sources) {
      for (const entry of source.domains) {
        const domain = aLabel(entry);
        if (domain !== null && !excluded.has(domain)) expected.add(domain);
      }
    }
    // Only public suffixes (`com.ar` on burner-email-providers) and the typo-squats the typo
    // check corrects (`gmial.com`: a typo is a typo first) go besides the exclusions.
    const packed = new Set(DISPOSABLE_PACKED.split('\n'));
    expect(packed.size).toBe(DISPOSABLE_COUNT);
    expect(domains.length).toBe(DISPOSABLE_COUNT);
    const missing = [...expected].filter((d) => !packed.has(d));
    const squats = missing.filter((d) => suggest(d) !== null);
    expect(squats).toEqual(expect.arrayContaining(['gmial.com', 'hotmal.com', 'outlok.com']));
    expect(missing.filter((d) => d.includes('.') && getPublicSuffix(d) !== d)).toEqual(squats);
    expect([...packed].filter((d) => !expected.has(d))).toEqual([]);
    const set = DISPOSABLE_DOMAINS();
    expect([...packed].filter((d) => !set.has(d))).toEqual([]);
  });

  it('holds Unicode entries as the A-labels the parser makes of them', () => {
    const unicode = sources
      .flatMap((source) => source.domains)
      .filter((entry) => /[^\x20-\x7e]/.test(entry));
    expect(unicode.length).toBeGreaterThanOrEqual(12);
    for (const entry of unicode) {
      const parsed = parseAddress(`ann@${entry.trim()}`, { globallyDeliverable: false });
      if (!parsed.ok) continue;
      expect(aLabel(entry)).toBe(parsed.asciiDomain);
      expect(flagged(entry.trim()), entry).toBe(true);
    }
  });

  it('never flags a free provider or a domain of the allow-list', () => {
    expect(free.length).toBeGreaterThanOrEqual(500);
    for (const domain of [...free, ...allow, ...FREE_PROVIDER_DOMAINS]) {
      expect(flagged(domain), domain).toBe(false);
    }
    for (const domain of ['yeah.net', '139.com', 'duck.com', 'hotmail.com.ar', 'x.co.uk']) {
      expect(flagged(domain), domain).toBe(false);
    }
  });

  it('flags at least 99% of each maintained list it merges', () => {
    const check = disposable();
    for (const source of sources) {
      let listed = 0;
      let hit = 0;
      for (const entry of source.domains) {
        const domain = aLabel(entry);
        if (domain === null) continue;
        const parsed = parseAddress(`ann@${domain}`, { globallyDeliverable: false });
        if (!parsed.ok) continue;
        listed++;
        const finding = check.run(
          { input: '', parsed: parsed as ParsedAddress },
          { dns: undefined as never },
        );
        if (!(finding instanceof Promise) && finding.status === 'risky') hit++;
      }
      expect(hit / listed, source.name).toBeGreaterThanOrEqual(0.99);
    }
  });

  it('every free provider names its source, and every source is described', () => {
    const text = readFileSync(new URL('../../data/free-providers.txt', import.meta.url), 'utf8');
    const described = new Set(
      [...text.matchAll(/^# {3}([a-z]+): \S/gm)].map((match) => match[1] as string),
    );
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      const [domain, source, extra] = line.split(' ');
      expect(extra, line).toBeUndefined();
      expect(described.has(source ?? ''), `${domain}: source ${source}`).toBe(true);
    }
    for (const name of ['mail-domains.txt', 'company-domains.txt', 'disposable-allow.txt']) {
      const header = readFileSync(new URL(`../../data/${name}`, import.meta.url), 'utf8');
      expect(header, name).toMatch(/^# Updated: \d{4}-\d{2}-\d{2}/m);
    }
    const allowText = readFileSync(
      new URL('../../data/disposable-allow.txt', import.meta.url),
      'utf8',
    );
    for (const line of allowText.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      // A reason per entry.
      expect(line.split(' ').length, line).toBeGreaterThan(3);
    }
  });
});

describe('PackedDomainSet', () => {
  it('answers like a Set with a parent walk', () => {
    const set = new PackedDomainSet(['a.io', 'b.example.com', 'mailinator.com'].join('\n'));
    expect(set.size).toBe(3);
    expect(set.has('a.io')).toBe(true);
    expect(set.has('io')).toBe(false);
    expect(set.has('a.i')).toBe(false);
    expect(set.hasSelfOrParent('x.y.mailinator.com')).toBe(true);
    expect(set.hasSelfOrParent('example.com')).toBe(false);
    expect(set.hasSelfOrParent('c.b.example.com')).toBe(true);
    expect(set.hasSelfOrParent('xmailinator.com')).toBe(false);
    expect(new PackedDomainSet('').hasSelfOrParent('a.io')).toBe(false);
  });
});

describe('allow-list hook', () => {
  it('disposable({ allow }) clears a domain and its subdomains, keeping the list', () => {
    const check = disposable({ allow: ['mailinator.com', 'BÜCHER-Relay.example'] });
    expect(flagged('mailinator.com', check)).toBe(false);
    expect(flagged('eu.mailinator.com', check)).toBe(false);
    expect(flagged('guerrillamail.com', check)).toBe(true);
    expect(flagged('yopmail.com', disposable())).toBe(true);
  });

  it('the engine option disposableAllow does the same without replacing the checker', () => {
    const engine = createEngine({ offline: true, disposableAllow: ['yopmail.com'] });
    expect(engine.verifySync('ann@yopmail.com').disposable).toBe(false);
    expect(engine.verifySync('ann@mailinator.com').disposable).toBe(true);
  });
});
