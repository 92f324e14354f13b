/**
 * Why an address failed to parse. Stable snake_case codes: users switch on them, so a code
 * is never renamed; new ones may be added.
 */
export const PARSE_ERROR_CODES = [
  'not_a_string',
  'empty',
  'too_long',
  'no_at_sign',
  'empty_local',
  'empty_domain',
  'local_too_long',
  'domain_too_long',
  'label_too_long',
  'bad_character',
  'unsafe_character',
  'leading_dot',
  'trailing_dot',
  'consecutive_dots',
  'hyphen_position',
  'invalid_idn',
  'domain_needs_dot',
  'invalid_tld',
  'special_use_domain',
  'quoted_local_not_allowed',
  'unclosed_quote',
  'domain_literal_not_allowed',
  'invalid_domain_literal',
  'display_name_not_allowed',
  'smtputf8_not_allowed',
] as const;

export type ParseErrorCode = (typeof PARSE_ERROR_CODES)[number];

/** Why one part of the address (local part, domain) failed: a code and a sentence. */
export interface PartFailure {
  readonly ok: false;
  readonly code: ParseErrorCode;
  readonly message: string;
}

/** A failed parse: the input, a stable code and a sentence a person can read. */
export interface ParseFailure extends PartFailure {
  readonly input: string;
}

export function partFailure(code: ParseErrorCode, message: string): PartFailure {
  return { ok: false, code, message };
}

export function failure(input: string, code: ParseErrorCode, message: string): ParseFailure {
  return { ok: false, input, code, message };
}

/** Names a character for an error message: printable ones quoted, the rest as U+XXXX. */
export function describeCharacter(char: string): string {
  const codePoint = char.codePointAt(0) ?? 0;
  if (codePoint === 0x20) return 'SPACE';
  if (codePoint > 0x20 && codePoint < 0x7f) return `'${char}'`;
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
}
