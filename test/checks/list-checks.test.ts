import { describe, expect, it } from 'vitest';
import type { Checker } from '../../src/checks/checker.js';
import { domain } from '../../src/checks/domain.js';
import { mailboxName } from '../../src/checks/local-name.js';
import { role } from '../../src/checks/role.js';
import { codeOf as checkCode, factsOf } from './helpers.js';

/** The list checks are read on any domain: no rule that it be globally deliverable. */
function facts(address: string, profile: 'default' | 'rfc' = 'default') {
  return factsOf(address, { profile, globallyDeliverable: false });
}

function codeOf(checker: Checker, address: string): string {
  return checkCode(checker, address, { profile: 'default', globallyDeliverable: false });
}

describe('mailboxName', () => {
  it('cuts at the first + and folds case only where needed', () => {
    expect(mailboxName('sales')).toBe('sales');
    expect(mailboxName('Sales')).toBe('sales');
    expect(mailboxName('sales+eu')).toBe('sales');
    expect(mailboxName('SALES+EU+x')).toBe('sales');
    expect(mailboxName('+tag')).toBe('');
    expect(mailboxName('jörg+x')).toBe('jörg');
    expect(mailboxName('JÖRG')).toBe('jörg');
    // The Kelvin sign folds to an ASCII k: Unicode folding, not ASCII only.
    expect(mailboxName('\u212Aontakt')).toBe('kontakt');
  });
});

describe('role', () => {
  it('finds role names before a +tag, in any case', () => {
    const check = role(new Set(['sales', 'info']));
    expect(codeOf(check, 'sales@acme.io')).toBe('risky:role_account');
    expect(codeOf(check, 'INFO+2024@acme.io')).toBe('risky:role_account');
    expect(codeOf(check, 'salesperson@acme.io')).toBe('pass:ok');
    expect(codeOf(check, 'sale@acme.io')).toBe('pass:ok');
    expect(codeOf(check, 'x+sales@acme.io')).toBe('pass:ok');
  });
});

describe('domain', () => {
  it('asks about the last label only, the whole domain when it has one label', () => {
    const asked: string[] = [];
    const check = domain((tld) => {
      asked.push(tld);
      return tld === 'io' || tld === 'localhost';
    });
    expect(codeOf(check, 'ann@acme.io')).toBe('pass:ok');
    expect(codeOf(check, 'ann@a.b.c.acme.notreal')).toBe('fail:unknown_tld');
    expect(codeOf(check, 'ann@localhost')).toBe('pass:ok');
    expect(asked).toEqual(['io', 'notreal', 'localhost']);
  });

  it('skips domain literals', () => {
    const check = domain(() => false);
    const finding = check.run(facts('ann@[192.0.2.1]', 'rfc'), { dns: undefined as never });
    expect(finding).toMatchObject({ status: 'skipped', code: 'domain_literal' });
  });
});
