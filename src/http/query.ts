import { badRequest } from './responses.js';

/** Longest query string a request may carry; a verify's needs are well under 2 KB. */
export const MAX_QUERY_LENGTH = 8192;

/**
 * The query parameters of `url`, each at most once and each one `allowed` names: an unknown
 * or repeated parameter is a 400 naming it, never a silent pick of the first or last value;
 * so is a value whose percent-encoded bytes are not UTF-8 (see assertIntact).
 */
export function readQuery(url: URL, allowed: readonly string[]): Map<string, string> {
  if (url.search.length > MAX_QUERY_LENGTH) {
    throw badRequest('query', `The query string is longer than ${MAX_QUERY_LENGTH} characters.`);
  }
  const values = new Map<string, string>();
  let damaged = false;
  for (const [name, value] of url.searchParams) {
    if (!allowed.includes(name)) {
      throw badRequest(
        shown(name),
        `Unknown parameter ${JSON.stringify(shown(name))}: allowed are ${allowed.join(', ')}.`,
      );
    }
    if (values.has(name)) throw badRequest(name, `The parameter ${name} is given more than once.`);
    values.set(name, value);
    if (value.includes(REPLACEMENT_CHARACTER)) damaged = true;
  }
  if (damaged) assertIntact(url.search);
  return values;
}

const REPLACEMENT_CHARACTER = '\uFFFD';
/** A `%` that starts no escape: URLSearchParams keeps it as it is, and so must we. */
const STRAY_PERCENT = /%(?![\da-f]{2})/gi;

/**
 * Refuses, naming the parameter, a query value whose percent-decoded bytes are not UTF-8.
 * URLSearchParams decodes such bytes (a lone surrogate `%ED%A0%80`, a cut sequence) to U+FFFD,
 * so a client would be answered about a string it never sent. Only a value holding U+FFFD is
 * looked at again: decodeURIComponent is the strict decoder (it throws on any byte sequence
 * that is not UTF-8), and a U+FFFD the client did send (`%EF%BF%BD`) decodes without error.
 */
function assertIntact(search: string): void {
  for (const pair of search.slice(1).split('&')) {
    const [name] = new URLSearchParams(pair).keys();
    try {
      decodeURIComponent(pair.replace(STRAY_PERCENT, '%25').replaceAll('+', '%20'));
    } catch {
      const field = shown(name ?? '');
      throw badRequest(field, `The parameter ${field} is not UTF-8 once percent-decoded.`);
    }
  }
}

/** A boolean parameter: true/false (or 1/0); absent is `fallback`. */
export function booleanParameter(
  query: ReadonlyMap<string, string>,
  name: string,
): boolean | undefined {
  const value = query.get(name);
  if (value === undefined) return undefined;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw badRequest(name, `${name} must be true or false.`);
}

/**
 * An integer parameter as the service's field takes it: decimal digits are the number, and
 * anything else goes on as the text it is, for the field's own check to refuse with the
 * message a library caller gets (request-fields.ts).
 */
export function integerParameter(
  query: ReadonlyMap<string, string>,
  name: string,
): number | string | undefined {
  const value = query.get(name);
  if (value === undefined) return undefined;
  return /^\d{1,15}$/.test(value) ? Number(value) : value;
}

/** A name from the client, cut short for echoing back in a message. */
export function shown(name: string): string {
  return name.length > 64 ? `${name.slice(0, 64)}…` : name;
}
