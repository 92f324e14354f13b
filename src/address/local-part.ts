import { describeCharacter, partFailure as fail, type PartFailure } from './errors.js';
import { MAX_LOCAL_OCTETS } from './limits.js';
import { boundedMemo } from './memo.js';
import {
  findUnsafeCharacter,
  isAscii,
  isMixedScript,
  startsWithCombiningMark,
  utf8Length,
} from './unicode.js';

export interface ParsedLocal {
  readonly ok: true;
  /** NFC-normalized local part, unquoted where quoting was unnecessary. */
  readonly local: string;
  readonly ascii: boolean;
  readonly confusable: boolean;
}

export interface LocalRules {
  readonly allowQuotedLocal: boolean;
  readonly allowSmtpUtf8: boolean;
}

// RFC 5322 3.2.3 atext, as a 128-entry table: one array read per character on the hot path.
export const ATEXT = new Uint8Array(128);
for (const char of "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-/=?^_`{|}~") {
  ATEXT[char.charCodeAt(0)] = 1;
}

export function isAtext(code: number): boolean {
  return code < 0x80 && ATEXT[code] === 1;
}

/**
 * RFC 2142 2: "Mailbox names must be recognized independent of character case" for the
 * names of its sections 3-5 (and RFC 5321 4.5.1 for postmaster). The normalized address
 * writes them in lowercase, as python-email-validator does; every other local part keeps
 * its case (RFC 5321 2.4).
 */
const CASE_INSENSITIVE_MAILBOXES: ReadonlySet<string> = new Set([
  'info',
  'marketing',
  'sales',
  'support',
  'abuse',
  'noc',
  'security',
  'postmaster',
  'hostmaster',
  'usenet',
  'news',
  'webmaster',
  'www',
  'uucp',
  'ftp',
]);

/** `local` in lowercase when it is one of RFC 2142's case-insensitive mailbox names. */
export function foldMailboxName(local: string): string {
  // 'noc' to 'postmaster': most local parts are decided by their length.
  if (local.length < 3 || local.length > 10) return local;
  // Only a name with an uppercase ASCII letter changes: no lowercase copy for the others.
  let upper = false;
  for (let i = 0; i < local.length && !upper; i++) {
    const code = local.charCodeAt(i);
    upper = code >= 0x41 && code <= 0x5a;
  }
  if (!upper) return local;
  const lower = local.toLowerCase();
  return CASE_INSENSITIVE_MAILBOXES.has(lower) ? lower : local;
}

/** Parses the part before the @-sign. Linear in its length. */
export function parseLocalPart(raw: string, rules: LocalRules): ParsedLocal | PartFailure {
  if (raw.length === 0) return fail('empty_local', 'There must be something before the @-sign.');
  if (raw.charCodeAt(0) === 0x22 /* " */) {
    if (!rules.allowQuotedLocal) {
      return fail(
        'quoted_local_not_allowed',
        'Quoting the part before the @-sign is not allowed here.',
      );
    }
    return parseQuotedLocal(raw, rules);
  }
  return parseDotAtom(raw, rules);
}

function parseDotAtom(raw: string, rules: LocalRules): ParsedLocal | PartFailure {
  let ascii = true;
  let previousDot = true; // the start behaves like a dot: no leading dot
  for (let i = 0; i < raw.length; i++) {
    const code = raw.charCodeAt(i);
    if (code === 0x2e) {
      if (i === 0) return fail('leading_dot', 'An email address cannot start with a period.');
      if (previousDot)
        return fail('consecutive_dots', 'An email address cannot have two periods in a row.');
      previousDot = true;
      continue;
    }
    previousDot = false;
    if (code < 0x80) {
      if (ATEXT[code] !== 1) {
        return fail(
          'bad_character',
          `The part before the @-sign contains an invalid character: ${describeCharacter(raw[i] as string)}.`,
        );
      }
    } else ascii = false;
  }
  if (previousDot)
    return fail(
      'trailing_dot',
      'An email address cannot have a period immediately before the @-sign.',
    );
  if (ascii) return checkLength({ ok: true, local: raw, ascii: true, confusable: false });
  return checkInternationalLocal(raw, rules);
}

/** RFC 6531 local parts: safe Unicode, NFC, nothing that decomposes into a forbidden character. */
function checkInternationalLocal(raw: string, rules: LocalRules): ParsedLocal | PartFailure {
  if (!rules.allowSmtpUtf8) {
    return fail(
      'smtputf8_not_allowed',
      'Non-ASCII characters before the @-sign are not allowed here.',
    );
  }
  return checkUnicodeLocal(raw);
}

// NFC and the script checks cost ~0.5 µs a local part; names repeat in real lists.
const checkUnicodeLocal = boundedMemo((raw: string): ParsedLocal | PartFailure => {
  if (isLatinLetters(raw)) {
    return checkLength({ ok: true, local: raw, ascii: false, confusable: false });
  }
  const unsafe = findUnsafeCharacter(raw);
  if (unsafe !== undefined) {
    return fail(
      'unsafe_character',
      `The email address contains an unsafe character: ${describeCharacter(unsafe)}.`,
    );
  }
  const local = raw.normalize('NFC');
  const forbidden = forbiddenAsciiAfterNfc(local);
  if (forbidden !== undefined) {
    return fail(
      'bad_character',
      `The part before the @-sign contains an invalid character: ${describeCharacter(forbidden)}.`,
    );
  }
  const atoms = local.split('.');
  if (atoms.some(startsWithCombiningMark)) {
    return fail(
      'unsafe_character',
      'The part before the @-sign starts with a combining character.',
    );
  }
  // NFC may leave only ASCII (U+212A KELVIN SIGN is 'K'): then no SMTPUTF8 is needed.
  if (isAscii(local)) return checkLength({ ok: true, local, ascii: true, confusable: false });
  const confusable = atoms.some(isMixedScript);
  return checkLength({ ok: true, local, ascii: false, confusable });
});

/**
 * The first ASCII character outside atext and '.' that the NFC text holds or that its
 * canonical decomposition would reveal. NFC already applies singleton decompositions
 * (U+037E GREEK QUESTION MARK becomes ';'), so the only characters left that decompose into
 * a forbidden ASCII character are U+226E '≮' and U+226F '≯' ('<' or '>' plus a combining
 * mark): checking them by name spares an NFD pass. test/address/unicode.test.ts proves the
 * equivalence over every code point.
 */
export function forbiddenAsciiAfterNfc(nfc: string): string | undefined {
  for (let i = 0; i < nfc.length; i++) {
    const code = nfc.charCodeAt(i);
    if (code < 0x80) {
      if (code !== 0x2e && ATEXT[code] !== 1) return nfc[i];
    } else if (code === 0x226e) {
      return '<';
    } else if (code === 0x226f) {
      return '>';
    }
  }
  return undefined;
}

/**
 * True when every non-ASCII character is a precomposed letter of Latin-1 Supplement or Latin
 * Extended-A/B (U+00C0-U+024F but × and ÷): the accents of most European names. Each is safe,
 * NFC-stable, decomposes only to ASCII letters and combining marks, and is Latin script, so
 * none of the Unicode checks below could find anything (test/address/unicode.test.ts checks
 * the whole range). Skipping them makes such local parts several times cheaper.
 */
export function isLatinLetters(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80 && (code < 0xc0 || code > 0x24f || code === 0xd7 || code === 0xf7)) {
      return false;
    }
  }
  return true;
}

/**
 * RFC 5321 4.1.2 quoted-string (with RFC 6531's UTF-8 qtext). The result is unquoted when the
 * content is a valid dot-atom, so `"john"@x` and `john@x` normalize to one address.
 */
function parseQuotedLocal(raw: string, rules: LocalRules): ParsedLocal | PartFailure {
  let content = '';
  let ascii = true;
  let i = 1;
  for (; i < raw.length; i++) {
    const code = raw.charCodeAt(i);
    if (code === 0x22) break;
    if (code === 0x5c /* \ */) {
      // quoted-pairSMTP: backslash followed by ASCII 32-126
      const next = raw.charCodeAt(i + 1);
      if (Number.isNaN(next))
        return fail('unclosed_quote', 'The quoted part before the @-sign is not closed.');
      if (next < 0x20 || next > 0x7e) {
        return fail(
          'bad_character',
          'A backslash in a quoted local part may only escape a printable ASCII character.',
        );
      }
      content += raw[i + 1];
      i++;
      continue;
    }
    // qtextSMTP: %d32-33 / %d35-91 / %d93-126, and UTF8-non-ascii when SMTPUTF8 is allowed
    if (code >= 0x80) {
      if (!rules.allowSmtpUtf8) {
        return fail(
          'smtputf8_not_allowed',
          'Non-ASCII characters before the @-sign are not allowed here.',
        );
      }
      ascii = false;
    } else if (code < 0x20 || code === 0x7f) {
      return fail(
        'bad_character',
        `The quoted part before the @-sign contains an invalid character: ${describeCharacter(raw[i] as string)}.`,
      );
    }
    content += raw[i];
  }
  if (i >= raw.length)
    return fail('unclosed_quote', 'The quoted part before the @-sign is not closed.');
  if (i !== raw.length - 1) {
    return fail('bad_character', 'Nothing may follow the closing quote before the @-sign.');
  }
  if (!ascii) {
    // RFC 6531 3.3: qtextSMTP takes UTF-8 too, so "Jöhn Doe" is as valid as "John Doe"; the
    // unsafe rule still refuses controls, format characters and every other kind of space.
    const unsafe = findUnsafeCharacter(content, true);
    if (unsafe !== undefined) {
      return fail(
        'unsafe_character',
        `The email address contains an unsafe character: ${describeCharacter(unsafe)}.`,
      );
    }
    content = content.normalize('NFC');
  }
  // The limit applies to the local part as it travels, quotes and escapes included.
  const asWritten = raw.length;
  if (ascii && asWritten > MAX_LOCAL_OCTETS) return localTooLong(asWritten);
  // NFC may leave only ASCII (U+212A KELVIN SIGN is 'K'): then no SMTPUTF8 is needed.
  if (!ascii && isAscii(content)) ascii = true;
  const unquoted = content.length > 0 ? parseDotAtom(content, rules) : undefined;
  if (unquoted?.ok) return unquoted;
  const local = `"${content.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
  return checkLength({ ok: true, local, ascii, confusable: false });
}

function localTooLong(octets: number): PartFailure {
  return fail(
    'local_too_long',
    `The part before the @-sign is ${octets - MAX_LOCAL_OCTETS} octets too long (at most ${MAX_LOCAL_OCTETS}).`,
  );
}

function checkLength(parsed: ParsedLocal): ParsedLocal | PartFailure {
  const octets = parsed.ascii ? parsed.local.length : utf8Length(parsed.local);
  return octets > MAX_LOCAL_OCTETS ? localTooLong(octets) : parsed;
}
