import { requireId } from '../service/request-fields.js';
import { badRequest } from './responses.js';

/**
 * An id from a path segment, percent-decoded once and then held to the form of the ids we
 * issue (the service's rule, request-fields.ts): `..`, an encoded slash, a NUL or a 10 KB
 * segment never reaches the service or a store.
 */
export function routeId(segment: string): string {
  let id: string;
  try {
    id = decodeURIComponent(segment);
  } catch {
    throw badRequest('id', 'The id in the path is not valid percent-encoding.');
  }
  return requireId(id);
}
