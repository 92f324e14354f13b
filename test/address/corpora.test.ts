import { describe, expect, it } from 'vitest';
import { parseAddress } from '../../src/address/parse.js';
import type { ProfileName } from '../../src/address/options.js';
import { loadSyntaxCorpus, type CorpusCase } from '../helpers/shared.js';

// The corpora are the peers' own suites, read from ../shared at test time: never copied here.
function agreement(
  cases: readonly CorpusCase[],
  profile: ProfileName,
  expected: (c: CorpusCase) => boolean | 'either',
) {
  const disagreements: string[] = [];
  let agreed = 0;
  for (const c of cases) {
    const want = expected(c);
    const result = parseAddress(c.address, { profile });
    if (want === 'either' || result.ok === want) agreed++;
    else
      disagreements.push(
        `${JSON.stringify(c.address)}: expected ${String(want)}, got ${result.ok ? 'valid' : result.code} (${c.note})`,
      );
  }
  return { agreed, disagreements };
}

const python = loadSyntaxCorpus('python-email-validator.json');
const isemail = loadSyntaxCorpus('isemail-tests-xml.json');

describe('peer syntax corpora', () => {
  it.skipIf(python === undefined)(
    'default profile reproduces python-email-validator (strict local-part length)',
    () => {
      const cases = python as CorpusCase[];
      // The three strict-mode cases are valid for python's defaults but over RFC 5321's 64 octets.
      const { agreed, disagreements } = agreement(cases, 'default', (c) =>
        c.note.includes('test_email_invalid_syntax_strict') ? false : c.valid,
      );
      console.log(
        `python-email-validator.json: ${agreed}/${cases.length} verdicts agree (default profile)`,
      );
      expect(disagreements).toEqual([]);
    },
  );

  it.skipIf(isemail === undefined)('rfc profile reproduces isemail tests.xml', () => {
    const cases = isemail as CorpusCase[];
    // id=71 (an IPv6 literal with 7 groups and "::") is ambiguous in isemail itself.
    const { agreed, disagreements } = agreement(cases, 'rfc', (c) =>
      c.note.startsWith('id=71;') ? 'either' : c.valid,
    );
    console.log(`isemail-tests-xml.json: ${agreed}/${cases.length} verdicts agree (rfc profile)`);
    expect(disagreements).toEqual([]);
  });
});
