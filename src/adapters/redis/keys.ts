/**
 * Every key of the Redis store, under one prefix so that several stores can share a server.
 * Records are JSON text in hashes; sorted sets keep orders and expiries, so that no request
 * path ever scans (no KEYS, no SCAN).
 */
export function redisKeys(prefix: string) {
  return {
    /** id -> AccountRecord. */
    accounts: `${prefix}accounts`,
    /** Account ids by createdAt (ties by id). */
    accountOrder: `${prefix}account-order`,
    /** An account's balance and version: available, reserved, used, total, v. */
    ledger: (accountId: string) => `${prefix}ledger:${accountId}`,
    /** ref -> LedgerEntry. */
    entries: (accountId: string) => `${prefix}entries:${accountId}`,
    /** Entry refs by seq. */
    entrySeqs: (accountId: string) => `${prefix}entry-seqs:${accountId}`,
    /** The counter seqs are taken from. */
    seq: `${prefix}seq`,
    /** ref -> ReservationState. */
    holds: (accountId: string) => `${prefix}holds:${accountId}`,
    /** Refs of reservations still holding credits, by expiry. */
    holding: (accountId: string) => `${prefix}holding:${accountId}`,
    /** [accountId, ref] of every reservation still holding credits, by expiry: the sweeper's. */
    holdExpiries: `${prefix}hold-expiries`,
    /** key -> IdempotencyRecord. */
    idempotency: (accountId: string) => `${prefix}idempotency:${accountId}`,
    /** [accountId, key] of every idempotency record, by createdAt: the sweeper's. */
    idempotencyAges: `${prefix}idempotency-ages`,

    /** id -> hash of the key. */
    keyHashes: `${prefix}key-hashes`,
    /** hash -> KeyRecord: authentication finds a key in one read. */
    keysByHash: `${prefix}keys-by-hash`,
    /** Key ids by createdAt. */
    accountKeys: (accountId: string) => `${prefix}account-keys:${accountId}`,

    /** id -> FilterRecord. */
    filters: `${prefix}filters`,
    /** value -> FilterRecord, per account and type: matching is one lookup, not a scan. */
    filterValues: (accountId: string, type: string) =>
      `${prefix}filter-values:${accountId}:${type}`,
    /** Filter ids in insertion order, all types or one. */
    filterOrder: (accountId: string, type?: string) =>
      `${prefix}filter-order:${accountId}${type === undefined ? '' : `:${type}`}`,
    filterSeq: `${prefix}filter-seq`,
    /** 'v4:24' -> how many IP filters use that prefix length. */
    ipPrefixes: (accountId: string) => `${prefix}ip-prefixes:${accountId}`,

    /** id -> JobRecord. */
    jobs: `${prefix}jobs`,
    /** Job ids by createdAt, per status. */
    jobsIn: (status: string) => `${prefix}jobs-in:${status}`,
    /** Finished job ids by purgeAt. */
    jobPurges: `${prefix}job-purges`,
    /** position -> {email, billable, duplicateOf}. */
    jobItems: (jobId: string) => `${prefix}job:${jobId}:items`,
    /** position -> {record, duplicate}. */
    jobResults: (jobId: string) => `${prefix}job:${jobId}:results`,
    /** Positions with a result, scored by position: results in pages. */
    jobDone: (jobId: string) => `${prefix}job:${jobId}:done`,
    /** Billable positions without a result, scored by position. */
    jobPending: (jobId: string) => `${prefix}job:${jobId}:pending`,
    /** position -> later positions repeating it that still wait for its result. */
    jobDuplicates: (jobId: string) => `${prefix}job:${jobId}:duplicates`,
    /** Webhook ids of a job by createdAt. */
    jobWebhooks: (jobId: string) => `${prefix}job:${jobId}:webhooks`,

    /** id -> WebhookMessage. */
    webhooks: `${prefix}webhooks`,
    /** Ids of pending webhooks by nextAttemptAt. */
    webhooksDue: `${prefix}webhooks-due`,
    /** An account's webhook ids by createdAt: `webhooks list`, newest first. */
    accountWebhooks: (accountId: string) => `${prefix}account-webhooks:${accountId}`,

    /** Prefix of rate-limiter-flexible's keys of one counter. */
    rate: (name: string) => `${prefix}rate:${name}`,
  };
}

export type RedisKeys = ReturnType<typeof redisKeys>;
