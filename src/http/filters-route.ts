import { optional } from '../optional.js';
import type { FilterAction, FilterType } from '../ports/store.js';
import { filterTypeOf, pageOf, perPageOf } from '../service/request-fields.js';
import type { FilterInfo } from '../service/service.js';
import type { Exchange } from './exchange.js';
import { integerParameter } from './query.js';
import { json, type Reply } from './responses.js';
import { routeId } from './route-id.js';
import { REQUEST_BODIES } from './routes.js';

/** A filter on the wire: snake_case, its time in ISO 8601. */
export function filterWire(filter: FilterInfo): Record<string, unknown> {
  return {
    id: filter.id,
    filter_type: filter.type,
    value: filter.value,
    action: filter.action,
    reason: filter.reason,
    created_at: new Date(filter.createdAt).toISOString(),
  };
}

/** POST /v1/filters `{value, filter_type, action, reason?}` -> 201 with the filter. */
export async function createFilterRoute(exchange: Exchange): Promise<Reply> {
  const caller = await exchange.authenticate('filters', exchange.query.get('api_key'));
  const body = await exchange.jsonBody(REQUEST_BODIES.NewFilter);
  // The service checks each value's type and form, naming the field (request-fields.ts).
  const filter = await exchange.service.createFilter(caller, {
    value: body.value as string,
    type: body.filter_type as FilterType,
    action: body.action as FilterAction,
    ...optional('reason', body.reason as string | undefined),
  });
  return json(201, filterWire(filter));
}

/** GET /v1/filters?filter_type=&page=&per_page= -> `{filters, total, page, per_page}`. */
export async function listFiltersRoute(exchange: Exchange): Promise<Reply> {
  const { query } = exchange;
  // Checked before the key is read, so that a malformed list costs nothing, by the service's
  // rules, so that each refusal reads as the library's.
  const type = query.get('filter_type');
  const page = integerParameter(query, 'page');
  const perPage = integerParameter(query, 'per_page');
  const list = {
    ...optional('type', type === undefined ? undefined : filterTypeOf(type)),
    ...optional('page', page === undefined ? undefined : pageOf(page)),
    ...optional('perPage', perPage === undefined ? undefined : perPageOf(perPage)),
  };
  const caller = await exchange.authenticate('filters', query.get('api_key'));
  const found = await exchange.service.listFilters(caller, list);
  return json(200, {
    filters: found.filters.map(filterWire),
    total: found.total,
    page: found.page,
    per_page: found.perPage,
  });
}

/** DELETE /v1/filters/{id} -> `{id, deleted: true}`; another account's or unknown: 404. */
export async function deleteFilterRoute(exchange: Exchange, rawId: string): Promise<Reply> {
  const id = routeId(rawId);
  const caller = await exchange.authenticate('filters', exchange.query.get('api_key'));
  return json(200, await exchange.service.deleteFilter(caller, id));
}
