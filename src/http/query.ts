import { badRequest } from './responses.js';

/** Longest query string a request may carry; a verify's needs are well under 2 KB. */
export const MAX_QUERY_LENGTH = 8192;

/**
 * The query parameters of `url`, each at most once and each one `allowed` names: an unknown
 * or repeated parameter is a 400 naming it, never a silent pick of the first or last value.
 */
export function readQuery(url: URL, allowed: readonly string[]): Map<string, string> {
  if (url.search.length > MAX_QUERY_LENGTH) {
    throw badRequest('query', `The query string is longer than ${MAX_QUERY_LENGTH} characters.`);
  }
  const values = new Map<string, string>();
  for (const [name, value] of url.searchParams) {
    if (!allowed.includes(name)) {
      throw badRequest(
        shown(name),
        `Unknown parameter ${JSON.stringify(shown(name))}: allowed are ${allowed.join(', ')}.`,
      );
    }
    if (values.has(name)) throw badRequest(name, `The parameter ${name} is given more than once.`);
    values.set(name, value);
  }
  return values;
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

/** A positive integer parameter (page numbers, sizes), checked for range by the service. */
export function integerParameter(
  query: ReadonlyMap<string, string>,
  name: string,
): number | undefined {
  const value = query.get(name);
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value)) throw badRequest(name, `${name} must be a positive integer.`);
  return Number(value);
}

/** A name from the client, cut short for echoing back in a message. */
export function shown(name: string): string {
  return name.length > 64 ? `${name.slice(0, 64)}…` : name;
}
