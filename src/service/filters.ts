import type { ParsedAddress } from '../address/parse.js';
import { canResolveHosts, ipFilterActionOf, ipFilterApplies } from '../engine/ip-filter-stage.js';
import { optional } from '../optional.js';
import type { IpFilter } from '../ports/ip-filter.js';
import type { FilterAction, FilterRecord, FilterType } from '../ports/store.js';
import type { AccountRef } from './auth.js';
import { accountOf, type ServiceContext } from './context.js';
import { domainChain, emailKey, normalizeFilterValue } from './filter-values.js';
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

/** The filters endpoints and the matching verifications run before anything is charged. */
export interface Filters {
  createFilter(caller: AccountRef, input: NewFilter): Promise<FilterInfo>;
  listFilters(
    caller: AccountRef,
    query?: { type?: FilterType; page?: number; perPage?: number },
  ): Promise<FilterList>;
  deleteFilter(caller: AccountRef, id: string): Promise<{ id: string; deleted: true }>;
  /**
   * Email, then domain and parents, then IPs; the most specific match's action decides. For a
   * single verify, which must know before it reserves a charge.
   */
  match(
    accountId: string,
    parsed: ParsedAddress,
    signal: AbortSignal | undefined,
  ): Promise<FilterAction | undefined>;
  /**
   * The account's IP filters as the engine asks them inside each domain's work (a batch's
   * verifications), or undefined when it has none or the engine resolves no mail hosts
   * (offline): then no IP is looked up, nor any filter read.
   */
  ipFilter(accountId: string): Promise<IpFilter | undefined>;
}

/** IP sets whose answers one filter remembers at most (a run over as many mail hosts). */
const REMEMBERED_IP_SETS = 10_000;

export function createFilters(ctx: ServiceContext): Filters {
  const { store, clock, engine } = ctx;

  /**
   * The account's IP filters, matched by lookup: for each IP, the ranges of the prefix lengths
   * the account uses that contain it, read through the filters' unique index. At most 33 or
   * 129 values per IP whatever the number of filters. Undefined, after one store read, when
   * the account has no IP filters: then nothing asks the DNS for an IP.
   *
   * One filter serves one verification or one run of a job's work, as the account's filters
   * were when it began (a job's email and domain filters are read at submission): it remembers
   * its answer for each set of IPs. The engine asks once per domain of a run; this keeps the
   * domains that share their mail hosts (a hosting provider's) to one read of their ranges.
   */
  async function ipFilterOf(accountId: string): Promise<IpFilter | undefined> {
    const prefixes = await store.ipFilterPrefixes(accountId);
    if (prefixes.v4.length === 0 && prefixes.v6.length === 0) return undefined;
    const lookup = async (ips: readonly string[]) => {
      const candidates = new Set<string>();
      for (const ip of ips) {
        for (const range of containingRangesByFamily(ip, prefixes)) candidates.add(range);
      }
      if (candidates.size === 0) return undefined;
      const ranges = await store.findFilters(accountId, 'ip_address', [...candidates]);
      return mostSpecificRange(ranges)?.action;
    };
    const answers = new Map<string, Promise<FilterAction | undefined>>();
    return {
      match(ips) {
        const key = ips.join(' ');
        let answer = answers.get(key);
        if (answer === undefined) {
          if (answers.size >= REMEMBERED_IP_SETS) answers.clear();
          answer = lookup(ips);
          answers.set(key, answer);
          // A failed read is not an answer: the next address asks the store again.
          answer.catch(() => answers.delete(key));
        }
        return answer;
      },
    };
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
      // No store read for IPs that cannot be had (offline, but for a domain literal's).
      if (!ipFilterApplies(parsed, engine.dns)) return undefined;
      const ipFilter = await ipFilterOf(accountId);
      return ipFilter && ipFilterActionOf(parsed, engine.dns, ipFilter, signal);
    },

    ipFilter: (accountId) =>
      canResolveHosts(engine.dns) ? ipFilterOf(accountId) : Promise.resolve(undefined),

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
