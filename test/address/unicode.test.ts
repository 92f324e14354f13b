import { describe, expect, it } from 'vitest';
import {
  forbiddenAsciiAfterNfc,
  isAtext,
  isLatinLetters,
  parseLocalPart,
} from '../../src/address/local-part.js';
import { isIdna2008Label } from '../../src/address/idna.js';
import {
  findUnsafeCharacter,
  isMixedScript,
  lastIndexOfCode,
  utf8Length,
} from '../../src/address/unicode.js';

describe('lastIndexOfCode', () => {
  it('agrees with lastIndexOf for one UTF-16 unit', () => {
    for (const text of ['', '@', 'a@b@c', 'abc', 'a.b.c.', '.x', 'x\u{1F600}@y']) {
      for (const char of ['@', '.', '\ud83d']) {
        expect(lastIndexOfCode(text, char.charCodeAt(0))).toBe(text.lastIndexOf(char));
      }
    }
  });
});

describe('unicode rules', () => {
  it('the Latin shortcut covers only characters the full checks would pass unchanged', () => {
    for (let code = 0x80; code <= 0x2ff; code++) {
      const char = String.fromCodePoint(code);
      if (!isLatinLetters(`a${char}`)) continue;
      expect(char.normalize('NFC')).toBe(char);
      expect(findUnsafeCharacter(char)).toBeUndefined();
      expect(/\p{Script=Latin}/u.test(char)).toBe(true);
      expect(
        [...char.normalize('NFD')].every((c) => c.charCodeAt(0) >= 0x80 || /[a-z]/i.test(c)),
      ).toBe(true);
    }
    expect(isLatinLetters('jörg')).toBe(true);
    expect(isLatinLetters('a×b')).toBe(false);
    expect(isLatinLetters('иван')).toBe(false);
  });

  it('finds every forbidden ASCII character an NFD pass would, over every code point', () => {
    const missed: string[] = [];
    for (let code = 0x80; code <= 0x10ffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const nfc = String.fromCodePoint(code).normalize('NFC');
      const viaNfd = [...nfc.normalize('NFD')].some(
        (c) => c.charCodeAt(0) < 0x80 && c !== '.' && !isAtext(c.charCodeAt(0)),
      );
      if (viaNfd !== (forbiddenAsciiAfterNfc(nfc) !== undefined)) missed.push(code.toString(16));
    }
    expect(missed).toEqual([]);
  });

  it('counts UTF-8 octets, surrogate pairs as four', () => {
    expect(utf8Length('a')).toBe(1);
    expect(utf8Length('é')).toBe(2);
    expect(utf8Length('€')).toBe(3);
    expect(utf8Length('😀')).toBe(4);
    expect(utf8Length('\ud800')).toBe(3); // a lone surrogate, as WTF-8 would write it
  });

  it('holds U-labels to IDNA 2008 with its CONTEXTO rules', () => {
    expect(isIdna2008Label('bücher')).toBe(true);
    expect(isIdna2008Label('l·l')).toBe(true); // Catalan middle dot between two l
    expect(isIdna2008Label('a·b')).toBe(false);
    expect(isIdna2008Label('😀')).toBe(false);
    expect(isIdna2008Label('Bücher')).toBe(false); // not mapped: uppercase is not PVALID
    expect(isIdna2008Label('ـ')).toBe(false); // U+0640 ARABIC TATWEEL is DISALLOWED
  });

  it('finds mixed scripts but allows the Japanese, Chinese and Korean mixes', () => {
    expect(isMixedScript('pаypal')).toBe(true);
    expect(isMixedScript('αβγ')).toBe(false);
    expect(isMixedScript('tokyo東京')).toBe(false);
    expect(isMixedScript('ελλάδαrus')).toBe(true);
  });

  it('a Latin-accented local part is accepted without NFC changes', () => {
    expect(
      parseLocalPart('zoë.müller', { allowQuotedLocal: false, allowSmtpUtf8: true }),
    ).toMatchObject({ ok: true, local: 'zoë.müller', ascii: false });
  });
});
