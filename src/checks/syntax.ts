import type { ParseResult } from '../address/parse.js';
import { fail, pass, risky, type Finding } from './checker.js';

/**
 * The syntax finding for a parse the engine already made: the one canonical parse feeds every
 * later check, so this checker never parses again. A confusable (mixed-script) address is
 * valid syntax, reported as a risk.
 */
const VALID = pass('syntax');
const MIXED_SCRIPT = risky('syntax', 'mixed_script', 'confusable');

export function syntaxFinding(parsed: ParseResult): Finding {
  if (!parsed.ok) return fail('syntax', parsed.code);
  return parsed.confusable ? MIXED_SCRIPT : VALID;
}
