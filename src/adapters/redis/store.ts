import { Redis } from 'ioredis';
import type {
  AccountRecord,
  CreditBalance,
  FilterRecord,
  IdempotencyRecord,
  IpFilterPrefixes,
  KeyRecord,
  LedgerEntry,
  RateCounter,
  ReservationState,
  Store,
} from '../../ports/store.js';
import { rangeShape } from '../../store/rules/ip-prefixes.js';
import { withKeyChanges } from '../../store/rules/key-changes.js';
import {
  applyLedgerCommit,
  applyLedgerRequest,
  EMPTY_BALANCE,
  expiredHoldRef,
  expiredHoldRelease,
  IDEMPOTENCY_TTL_MS,
  idempotencyLive,
} from '../../store/rules/ledger.js';
import { rateCounterOver, UNLIMITED_POINTS } from '../../store/rules/rate-counter.js';
import { StoreError } from '../../store/rules/store-error.js';
import { createRedisBatchStore } from './batch-store.js';
import { parsed, records, redisConnection, updateRecord, type Command } from './connection.js';
import { redisKeys } from './keys.js';
import { accountWrites, commitWants } from './ledger.js';

export interface RedisStoreOptions {
  /**
   * Prefix of every key the store writes, so that other applications (and other mailverdict
   * stores) can share the server. Default `mv:`.
   */
  readonly keyPrefix?: string;
  /**
   * How often expired credit holds are released and idempotency keys past their 24 hours
   * forgotten; also once when the store opens. Default 1 minute; 0 only at open.
   */
  readonly holdSweepMs?: number;
  /**
   * How long a command of the store's own connection waits for Redis's answer before the call
   * fails with a StoreError `io`. A Redis that is frozen or cut off without the connection
   * closing (a stopped process, a partition) otherwise holds every request until TCP gives up.
   * Default 10 s, far above any one write (a 50,000-address job is one write of some 300 ms).
   * Not applied to a client you pass: its own `commandTimeout` decides.
   */
  readonly commandTimeoutMs?: number;
}

export const REDIS_KEY_PREFIX = 'mv:';
export const REDIS_HOLD_SWEEP_MS = 60_000;
/**
 * Reconnections a command waits through before it fails: with ioredis's backoff (50 ms more
 * each time) a request fails within about a second while Redis is down, instead of hanging.
 */
export const REDIS_MAX_RETRIES_PER_REQUEST = 2;
export const REDIS_COMMAND_TIMEOUT_MS = 10_000;

/**
 * The Store on Redis, for several API and worker processes that share one truth:
 * accounts, keys, filters, idempotency keys, the credits ledger, batch jobs and the webhook
 * outbox, under one key prefix. Every write to an account is one atomic script guarded by the
 * account's version (ledger.ts), or for a batch worker's results with their settles, one
 * script that decides in Redis (job-results.ts), so two processes can never both spend
 * the last credit; rate limits are rate-limiter-flexible's Redis limiter, atomic across
 * processes. Given a URL,
 * the store owns its connection (`close()` quits it); given an ioredis client, it leaves the
 * client open, and the client should be built with a small `maxRetriesPerRequest`. Redis
 * unreachable fails a call with a StoreError `io` (500 internal_error), never a charge without
 * a record. Meant for a single Redis (or a primary with replicas), not Redis Cluster: a write
 * spans an account's keys and the store's shared indexes.
 *
 * @example
 * import { createRedisStore } from 'mailverdict/redis';
 * const store = createRedisStore('redis://127.0.0.1:6379', { keyPrefix: 'mv:' });
 */
export function createRedisStore(redis: string | Redis, options: RedisStoreOptions = {}): Store {
  const owned = typeof redis === 'string';
  const client = owned
    ? new Redis(redis, {
        maxRetriesPerRequest: REDIS_MAX_RETRIES_PER_REQUEST,
        commandTimeout: commandTimeoutOf(options.commandTimeoutMs),
      })
    : redis;
  // The store's calls report their own failures; the client's event would be a second report.
  if (owned) client.on('error', () => undefined);
  const connection = redisConnection(client);
  const { call, read, write } = connection;
  const keys = redisKeys(options.keyPrefix ?? REDIS_KEY_PREFIX);
  const accounts = accountWrites(connection, keys);
  const counters = new Map<string, RateCounter>();
  let closed = false;
  const open = () => {
    if (closed) throw new StoreError('closed', 'The store is closed.');
  };

  /** Releases the holds of `members` ([accountId, ref]) that have expired at `at`. */
  async function releaseExpired(members: readonly string[], at: number): Promise<number> {
    let released = 0;
    for (const [accountId, refs] of byAccount(members)) {
      const wants = { reservations: refs, refs: refs.map(expiredHoldRef) };
      released += await accounts.transact(accountId, wants, [], (book) => {
        let count = 0;
        for (const ref of refs) {
          const hold = book.reservation(ref);
          if (hold === undefined || hold.held === 0 || hold.expiresAt > at) continue;
          if (applyLedgerRequest(accountId, expiredHoldRelease(hold), at, book).ok) count++;
        }
        return { result: count };
      });
    }
    return released;
  }

  /** Forgets the idempotency keys of `members` ([accountId, key]) dead at `at`. */
  async function forgetDead(members: readonly string[], at: number): Promise<void> {
    for (const [accountId, names] of byAccount(members)) {
      await accounts.transact(accountId, { idempotency: names }, [], (book) => {
        for (const name of names) {
          const record = book.idempotency(name);
          if (record !== undefined && !idempotencyLive(record, at)) {
            book.putIdempotency(name, undefined);
          }
        }
        return { result: undefined };
      });
    }
  }

  const ipPrefixField = (value: string) => {
    const { width, bits } = rangeShape(value);
    return `${width === 32 ? 'v4' : 'v6'}:${bits}`;
  };

  const store: Store = {
    // Batch jobs, results and the webhook outbox (issue 12): batch-store.ts.
    ...createRedisBatchStore(connection, keys, accounts, open),

    async insertAccount(account) {
      open();
      const failed = await write(
        [{ key: keys.accounts, field: account.id, expected: '' }],
        [
          ['hset', keys.accounts, account.id, JSON.stringify(account)],
          ['zadd', keys.accountOrder, account.createdAt, account.id],
          // prettier-ignore
          ['hset', keys.ledger(account.id), 'available', 0, 'reserved', 0, 'used', 0, 'total', 0, 'v', 0],
        ],
      );
      if (failed !== 0) throw new StoreError('constraint', `Account ${account.id} exists.`);
    },
    async getAccount(id) {
      open();
      return parsed<AccountRecord>(await call(['hget', keys.accounts, id]));
    },
    async listAccounts() {
      open();
      const ids = await call<string[]>(['zrange', keys.accountOrder, 0, -1]);
      return records<AccountRecord>(connection, keys.accounts, ids);
    },
    async updateAccount(id, changes) {
      open();
      return updateRecord<AccountRecord, AccountRecord | undefined>(
        connection,
        keys.accounts,
        id,
        (account) => {
          if (account === undefined) return { result: undefined };
          const updated = { ...account, ...changes };
          return {
            result: updated,
            commands: [['hset', keys.accounts, id, JSON.stringify(updated)]],
          };
        },
      );
    },

    async insertKey(key) {
      open();
      const failed = await write(
        [
          { key: keys.keyHashes, field: key.id, expected: '' },
          { key: keys.keysByHash, field: key.hash, expected: '' },
        ],
        [
          ['hset', keys.keyHashes, key.id, key.hash],
          ['hset', keys.keysByHash, key.hash, JSON.stringify(key)],
          ['zadd', keys.accountKeys(key.accountId), key.createdAt, key.id],
        ],
      );
      if (failed !== 0) throw new StoreError('constraint', 'A key with this id or hash exists.');
    },
    async getKey(id) {
      open();
      const hash = await call<string | null>(['hget', keys.keyHashes, id]);
      return hash === null
        ? undefined
        : parsed<KeyRecord>(await call(['hget', keys.keysByHash, hash]));
    },
    async findKeyByHash(hash) {
      open();
      return parsed<KeyRecord>(await call(['hget', keys.keysByHash, hash]));
    },
    async listKeys(accountId) {
      open();
      const ids = await call<string[]>(['zrange', keys.accountKeys(accountId), 0, -1]);
      const hashes =
        ids.length === 0 ? [] : await call<(string | null)[]>(['hmget', keys.keyHashes, ...ids]);
      return records<KeyRecord>(
        connection,
        keys.keysByHash,
        hashes.filter((hash) => hash !== null),
      );
    },
    async updateKey(id, changes) {
      open();
      const hash = await call<string | null>(['hget', keys.keyHashes, id]);
      if (hash === null) return undefined;
      return updateRecord<KeyRecord, KeyRecord | undefined>(
        connection,
        keys.keysByHash,
        hash,
        (key) => {
          if (key === undefined) return { result: undefined };
          const updated = withKeyChanges(key, changes);
          return {
            result: updated,
            commands: [['hset', keys.keysByHash, hash, JSON.stringify(updated)]],
          };
        },
      );
    },

    async applyLedger(accountId, request, at) {
      open();
      return accounts.transact(accountId, commitWants({ requests: [request] }), [], (book) => ({
        result: applyLedgerRequest(accountId, request, at, book),
      }));
    },
    async commitLedger(accountId, commit, at) {
      open();
      return accounts.transact(accountId, commitWants(commit), [], (book) => ({
        result: applyLedgerCommit(accountId, commit, at, book),
      }));
    },
    async idempotencyRecord(accountId, key, at) {
      open();
      const record = parsed<IdempotencyRecord>(
        await call(['hget', keys.idempotency(accountId), key]),
      );
      return record !== undefined && idempotencyLive(record, at) ? record : undefined;
    },
    async listHolds(accountId) {
      open();
      // By expiry, then reference: a sorted set's order for equal scores.
      const refs = await call<string[]>(['zrange', keys.holding(accountId), 0, -1]);
      const holds = await records<ReservationState>(connection, keys.holds(accountId), refs);
      return holds.filter((hold) => hold.held > 0);
    },
    async sweep(at) {
      open();
      const [holds, idempotency] = (await read([
        ['zrangebyscore', keys.holdExpiries, '-inf', at],
        // Dead when at - createdAt >= IDEMPOTENCY_TTL_MS (idempotencyLive).
        ['zrangebyscore', keys.idempotencyAges, '-inf', at - IDEMPOTENCY_TTL_MS],
      ])) as [string[], string[]];
      const released = await releaseExpired(holds, at);
      await forgetDead(idempotency, at);
      return released;
    },
    async balance(accountId) {
      open();
      const fields = ['available', 'reserved', 'used', 'total'] as const;
      const values = await call<(string | null)[]>(['hmget', keys.ledger(accountId), ...fields]);
      if (values[0] === null) return EMPTY_BALANCE;
      const [available, reserved, used, total] = values.map(Number) as number[];
      return { available, reserved, used, total } as CreditBalance;
    },
    async ledgerEntries(accountId, page = {}) {
      open();
      const range: Command = [
        'zrangebyscore',
        keys.entrySeqs(accountId),
        `(${page.afterSeq ?? 0}`,
        '+inf',
      ];
      const refs = await call<string[]>(
        page.limit === undefined ? range : [...range, 'LIMIT', 0, Math.max(0, page.limit)],
      );
      return records<LedgerEntry>(connection, keys.entries(accountId), refs);
    },

    async insertFilter(filter) {
      open();
      const { accountId, type, id, value } = filter;
      // Insertion order, the order filters are listed in.
      const seq = await call<number>(['incr', keys.filterSeq]);
      const text = JSON.stringify(filter);
      const commands: Command[] = [
        ['hset', keys.filters, id, text],
        ['hset', keys.filterValues(accountId, type), value, text],
        ['zadd', keys.filterOrder(accountId), seq, id],
        ['zadd', keys.filterOrder(accountId, type), seq, id],
      ];
      if (type === 'ip_address') {
        commands.push(['hincrby', keys.ipPrefixes(accountId), ipPrefixField(value), 1]);
      }
      const failed = await write(
        [
          { key: keys.filterValues(accountId, type), field: value, expected: '' },
          { key: keys.filters, field: id, expected: '' },
        ],
        commands,
      );
      if (failed === 1) return 'duplicate';
      if (failed === 2) throw new StoreError('constraint', `Filter ${id} exists.`);
      return 'inserted';
    },
    async listFilters(accountId, query) {
      open();
      const order = keys.filterOrder(accountId, query.type);
      // ZRANGE's stop is inclusive, and a stop below the start reads nothing only past 0.
      const stop = query.offset + Math.max(query.limit, 1) - 1;
      const [ids, total] = (await read([
        ['zrange', order, query.offset, stop],
        ['zcard', order],
      ])) as [string[], number];
      const filters =
        query.limit > 0 ? await records<FilterRecord>(connection, keys.filters, ids) : [];
      return { filters, total };
    },
    async deleteFilter(accountId, id) {
      open();
      return updateRecord<FilterRecord, boolean>(connection, keys.filters, id, (filter) => {
        if (filter?.accountId !== accountId) return { result: false };
        const commands: Command[] = [
          ['hdel', keys.filters, id],
          ['hdel', keys.filterValues(accountId, filter.type), filter.value],
          ['zrem', keys.filterOrder(accountId), id],
          ['zrem', keys.filterOrder(accountId, filter.type), id],
        ];
        if (filter.type === 'ip_address') {
          commands.push(['hincrby', keys.ipPrefixes(accountId), ipPrefixField(filter.value), -1]);
        }
        return { result: true, commands };
      });
    },
    async findFilters(accountId, type, values) {
      open();
      if (values === undefined) {
        const ids = await call<string[]>(['zrange', keys.filterOrder(accountId, type), 0, -1]);
        return records<FilterRecord>(connection, keys.filters, ids);
      }
      if (values.length === 0) return [];
      const texts = await call<(string | null)[]>([
        'hmget',
        keys.filterValues(accountId, type),
        ...values,
      ]);
      return texts.flatMap((text) => (text === null ? [] : [JSON.parse(text) as FilterRecord]));
    },
    async ipFilterPrefixes(accountId) {
      open();
      const counts = await call<Record<string, string>>(['hgetall', keys.ipPrefixes(accountId)]);
      const inUse: IpFilterPrefixes = { v4: [], v6: [] };
      for (const [field, count] of Object.entries(counts)) {
        if (Number(count) <= 0) continue;
        const [family, bits] = field.split(':') as ['v4' | 'v6', string];
        (inUse[family] as number[]).push(Number(bits));
      }
      for (const family of [inUse.v4, inUse.v6]) (family as number[]).sort((a, b) => a - b);
      return inUse;
    },

    rateCounter(name, windowMs) {
      const id = `${name}:${windowMs}`;
      let counter = counters.get(id);
      if (counter === undefined) {
        // The windows run on Redis's clock (the key's expiry), one clock for every process.
        const inner = rateCounterOver(async () => {
          const { RateLimiterRedis } = await import('rate-limiter-flexible');
          return new RateLimiterRedis({
            storeClient: client,
            useRedisPackage: false,
            keyPrefix: keys.rate(name),
            points: UNLIMITED_POINTS,
            duration: windowMs / 1000,
          });
        });
        counter = {
          async hit(key) {
            open();
            return connection.guarded(() => inner.hit(key));
          },
          async peek(key) {
            open();
            return connection.guarded(() => inner.peek(key));
          },
        };
        counters.set(id, counter);
      }
      return counter;
    },

    async close() {
      if (closed) return;
      closed = true;
      clearInterval(sweeper);
      if (!owned) return;
      // QUIT waits for the replies still due; a connection that is down has none to wait for.
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };

  // Expired holds are released at open and on an interval that never keeps the process alive
  // (a crash never keeps credits locked); a sweep that fails (Redis down) is done by the next.
  const sweep = () => {
    if (!closed) store.sweep(Date.now()).catch(() => undefined);
  };
  sweep();
  const intervalMs = options.holdSweepMs ?? REDIS_HOLD_SWEEP_MS;
  const sweeper = intervalMs > 0 ? setInterval(sweep, intervalMs) : undefined;
  sweeper?.unref();
  return store;
}

/** Members of the sweepers' sorted sets ([accountId, name]) grouped by account. */
function byAccount(members: readonly string[]): Map<string, string[]> {
  const grouped = new Map<string, string[]>();
  for (const member of members) {
    const [accountId, name] = JSON.parse(member) as [string, string];
    const names = grouped.get(accountId);
    if (names === undefined) grouped.set(accountId, [name]);
    else names.push(name);
  }
  return grouped;
}

function commandTimeoutOf(ms: number | undefined): number {
  if (ms === undefined) return REDIS_COMMAND_TIMEOUT_MS;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
    throw new RangeError(`commandTimeoutMs must be a positive number of ms, got ${String(ms)}`);
  }
  return ms;
}
