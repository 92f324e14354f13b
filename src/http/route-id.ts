import { badRequest } from './responses.js';

/** Ids the service hands out: a prefix and base62 (`flt_…`, `batch_…`). */
const ID = /^[\w-]{1,100}$/;

/**
 * An id from a path segment, percent-decoded once and then held to the form of the ids we
 * issue: `..`, an encoded slash, a NUL or a 10 KB segment never reaches the service or a store.
 */
export function routeId(segment: string): string {
  let id: string;
  try {
    id = decodeURIComponent(segment);
  } catch {
    throw badRequest('id', 'The id in the path is not valid percent-encoding.');
  }
  if (!ID.test(id)) {
    throw badRequest('id', 'The id in the path must be 1 to 100 letters, digits, _ or -.');
  }
  return id;
}
