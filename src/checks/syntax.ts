import type { ParseErrorCode } from '../address/errors.js';
import type { ParseResult } from '../address/parse.js';
import { fail, pass, risky, type Finding } from './checker.js';

/**
 * The syntax finding for a parse the engine already made: the one canonical parse feeds every
 * later check, so this checker never parses again. A confusable (mixed-script) address is
 * valid syntax, reported as a risk.
 */
const VALID = pass('syntax');
const MIXED_SCRIPT = risky('syntax', 'mixed_script', 'confusable');

// One finding per error code, made on first use: the codes are a closed set, and the engine
// recognizes findings it has seen before by identity (engine/outcome.ts).
const FAILURES = new Map<ParseErrorCode, Finding>();

export function syntaxFinding(parsed: ParseResult): Finding {
  if (!parsed.ok) {
    let failure = FAILURES.get(parsed.code);
    if (failure === undefined) FAILURES.set(parsed.code, (failure = fail('syntax', parsed.code)));
    return failure;
  }
  return parsed.confusable ? MIXED_SCRIPT : VALID;
}
