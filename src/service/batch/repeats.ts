import type { ParseResult } from '../../address/parse.js';
import { emailKey } from '../filter-values.js';

/**
 * Finds the repeats of a list, as a batch job and the CLI's `batch` mark them `duplicate`:
 * two addresses are the same when they parse to the same mailbox, the local part compared
 * without case and the domain as its A-labels (the form email filters match, emailKey); an
 * address that does not parse repeats only the very same text. Called once per address in
 * list order, it answers the position of the first occurrence when this one repeats it, and
 * undefined (remembering this one) when it is the first.
 */
export function repeatFinder(): (
  email: string,
  parsed: ParseResult,
  position: number,
) => number | undefined {
  const first = new Map<string, number>();
  return (email, parsed, position) => {
    const key = parsed.ok ? emailKey(parsed) : email;
    const earlier = first.get(key);
    if (earlier === undefined) first.set(key, position);
    return earlier;
  };
}
