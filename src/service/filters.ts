import type { ParsedAddress } from '../address/parse.js';
import { mailHosts } from '../checks/mx.js';
import { optional } from '../optional.js';
import type { FilterAction, FilterRecord, FilterType } from '../ports/store.js';
import type { AccountRef } from './auth.js';
import { accountOf, type ServiceContext } from './context.js';
import { domainChain, emailKey, literalIp, normalizeFilterValue } from './filter-values.js';
import { containingRangesByFamily, rangeHostBits } from './ip-ranges.js';
import {
  filterActionOf,
  filterReasonOf,
  filterTypeOf,
  filterValueText,
  pageOf,
  perPageOf,
  requireId,
} from './request-fields.js';
import { invalidRequest, ServiceError } from './service-error.js';
import { answering, optionalObject, requireAccountRef, requireObject } from './validate.js';

export type FilterInfo = Omit<FilterRecord, 'accountId'>;

export interface FilterList {
  readonly filters: readonly FilterInfo[];
  readonly total: number;
  readonly page: number;
  readonly perPage: number;
}

export interface NewFilter {
  readonly value: string;
  readonly type: FilterType;
  readonly action: FilterAction;
  readonly reason?: string;
}

/** The filters endpoints (DESIGN 5.4) and the matching verify runs before spending credits. */
export interface Filters {
  createFilter(caller: AccountRef, input: NewFilter): Promise<FilterInfo>;
  listFilters(
    caller: AccountRef,
    query?: { type?: FilterType; page?: number; perPage?: number },
  ): Promise<FilterList>;
  deleteFilter(caller: AccountRef, id: string): Promise<{ id: string; deleted: true }>;
  /** Email, then domain and parents, then IPs (DESIGN 5.4); a match's action decides. */
  match(
    accountId: string,
    parsed: ParsedAddress,
    signal: AbortSignal | undefined,
  ): Promise<FilterAction | undefined>;
}

/** MX hosts whose addresses are matched against IP filters, as many as the prober tries. */
const MX_HOSTS_FOR_IP_FILTERS = 3;

export function createFilters(ctx: ServiceContext): Filters {
  const { store, clock, engine } = ctx;

  async function mailHostIps(domain: string, signal: AbortSignal | undefined): Promise<string[]> {
    const { dns } = engine;
    if (dns.offline === true || dns.addresses === undefined) return [];
    const hosts = mailHosts(await dns.mx(domain, signal)).slice(0, MX_HOSTS_FOR_IP_FILTERS);
    const lists = await Promise.all(
      hosts.map((host) => dns.addresses?.(host.exchange, signal) ?? []),
    );
    return lists.flat();
  }

  /**
   * The most specific IP filter over the address's IPs (a domain literal's, else its MX
   * hosts'), by lookup: for each IP, the ranges of the prefix lengths the account uses that
   * contain it, read through the filters' unique index. At most 33 or 129 values per IP
   * whatever the number of filters; no store read when no IP can be had (offline), no DNS
   * query when the account has no IP filters.
   */
  async function matchIp(
    accountId: string,
    parsed: ParsedAddress,
    signal: AbortSignal | undefined,
  ): Promise<FilterRecord | undefined> {
    const literal = parsed.domainLiteral ? literalIp(parsed.asciiDomain) : undefined;
    if (literal === undefined && !canResolveIps()) return undefined;
    const prefixes = await store.ipFilterPrefixes(accountId);
    if (prefixes.v4.length === 0 && prefixes.v6.length === 0) return undefined;
    const ips = literal !== undefined ? [literal] : await mailHostIps(parsed.asciiDomain, signal);
    const candidates = new Set<string>();
    for (const ip of ips) {
      for (const range of containingRangesByFamily(ip, prefixes)) candidates.add(range);
    }
    if (candidates.size === 0) return undefined;
    return mostSpecificRange(await store.findFilters(accountId, 'ip_address', [...candidates]));
  }

  function canResolveIps(): boolean {
    return engine.dns.offline !== true && engine.dns.addresses !== undefined;
  }

  return {
    async match(accountId, parsed, signal) {
      const [email] = await store.findFilters(accountId, 'email', [emailKey(parsed)]);
      if (email !== undefined) return email.action;
      if (!parsed.domainLiteral) {
        const chain = domainChain(parsed.asciiDomain);
        const domains = await store.findFilters(accountId, 'domain', chain);
        for (const domain of chain) {
          const match = domains.find((filter) => filter.value === domain);
          if (match !== undefined) return match.action;
        }
      }
      return (await matchIp(accountId, parsed, signal))?.action;
    },

    createFilter: (caller, input) =>
      answering(async () => {
        const accountId = requireAccountRef(caller);
        const fields = requireObject(input, 'filter');
        const type = filterTypeOf(fields.type);
        const action = filterActionOf(fields.action);
        const normalized = normalizeFilterValue(type, filterValueText(fields.value));
        if (!normalized.ok) throw invalidRequest('value', normalized.message);
        const reason = filterReasonOf(fields.reason);
        // Memory would file a filter under any id and SQLite refuse it: both answer 404.
        await accountOf(ctx, accountId);
        const record: FilterRecord = {
          id: ctx.newId('flt'),
          accountId,
          type,
          value: normalized.value,
          action,
          reason,
          createdAt: clock.now(),
        };
        if ((await store.insertFilter(record)) === 'duplicate') {
          throw new ServiceError(
            'conflict',
            `A ${record.type} filter for ${record.value} exists already.`,
            {
              filter_type: record.type,
              value: record.value,
            },
          );
        }
        return filterInfo(record);
      }),

    listFilters: (caller, query) =>
      answering(async () => {
        const accountId = requireAccountRef(caller);
        const fields = optionalObject(query, 'query');
        const type = fields.type === undefined ? undefined : filterTypeOf(fields.type);
        const page = pageOf(fields.page);
        const perPage = perPageOf(fields.perPage);
        await accountOf(ctx, accountId);
        const found = await store.listFilters(accountId, {
          ...optional('type', type),
          offset: (page - 1) * perPage,
          limit: perPage,
        });
        return { filters: found.filters.map(filterInfo), total: found.total, page, perPage };
      }),

    deleteFilter: (caller, id) =>
      answering(async () => {
        const accountId = requireAccountRef(caller);
        const filterId = requireId(id);
        if (!(await store.deleteFilter(accountId, filterId))) {
          throw new ServiceError('not_found', `No filter ${filterId}.`);
        }
        return { id: filterId, deleted: true as const };
      }),
  };
}

function filterInfo({ accountId: _accountId, ...info }: FilterRecord): FilterInfo {
  return info;
}

/**
 * Of ranges that match, the one holding the fewest addresses wins, so that each family is
 * ranked on its own scale (an IPv4 host outranks an IPv6 /33); between equally large ones,
 * block wins over allow.
 */
function mostSpecificRange(matches: readonly FilterRecord[]): FilterRecord | undefined {
  let best: FilterRecord | undefined;
  let bestSize = Infinity;
  for (const range of matches) {
    const size = rangeHostBits(range.value);
    if (size < bestSize || (size === bestSize && range.action === 'block')) {
      best = range;
      bestSize = size;
    }
  }
  return best;
}
