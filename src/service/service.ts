import { parseAddress, type ParsedAddress } from '../address/parse.js';
import type { Engine } from '../engine/engine.js';
import { FILTER_VERDICTS, fixedVerdict } from '../engine/fixed-verdict.js';
import { METHOD_NAMES, type MethodName } from '../engine/methods.js';
import { testAddressVerdict } from '../engine/test-addresses.js';
import { UNKNOWN_REASONS, type Verdict } from '../engine/verdict.js';
import { mailHosts } from '../checks/mx.js';
import { optional } from '../optional.js';
import { systemClock, type Clock } from '../ports/clock.js';
import type {
  AccountRecord,
  CreditBalance,
  FilterAction,
  FilterRecord,
  FilterType,
  KeyRecord,
  LedgerEntry,
  Store,
} from '../ports/store.js';
import {
  cryptoRandomBytes,
  hashKey,
  issueKey,
  keyKind,
  presentedKey,
  randomBase62,
  type KeyKind,
  type RandomBytes,
} from './api-keys.js';
import { billingPeriod } from './billing-period.js';
import { domainChain, emailKey, literalIp, normalizeFilterValue } from './filter-values.js';
import { canonicalRange, clientKey, ipInRange, rangeBits } from './ip-ranges.js';
import type { LedgerOutcome, LedgerRequest } from './ledger.js';
import {
  isPlanName,
  PLAN_NAMES,
  PLANS,
  PUBLIC_KEY_DAILY_LIMIT,
  type Plan,
  type PlanName,
} from './plans.js';
import { createRateLimits, type RateLimitStatus } from './rate-limits.js';
import { invalidRequest, ServiceError } from './service-error.js';
import { canonicalTrustedDomain, hostTrusted, requestHost } from './trusted-domains.js';
import { answering, optionalText, requireInteger, requireList, requireText } from './validate.js';

export interface ServiceOptions {
  /** The engine verifications run on; its method costs are the credits charged. */
  readonly engine: Engine;
  /** Where accounts, keys, the ledger, filters and rate-limit windows live. */
  readonly store: Store;
  readonly clock?: Clock;
  /** Random bytes for keys, ids and secrets. Default: the platform's CSPRNG. */
  readonly random?: RandomBytes;
  /** Requests a day per end user of a public key. Default 10 (DESIGN 5.1). */
  readonly publicKeyDailyLimit?: number;
}

/** The endpoints of DESIGN 5 a key may call; public keys may call `verify` only. */
export type Endpoint = 'verify' | 'batch' | 'account' | 'filters';

/** What a request presents, as the HTTP layer (or any host) read it. */
export interface AuthRequest {
  /** The `Authorization` header. */
  readonly authorization?: string | null;
  /** The `api_key` parameter. */
  readonly apiKey?: string | null;
  /** The client's IP as the host server saw it (never X-Forwarded-For unless trusted). */
  readonly clientIp?: string | null;
  readonly origin?: string | null;
  readonly referer?: string | null;
  readonly endpoint: Endpoint;
}

/** An authenticated, admitted request's caller. */
export interface Caller {
  readonly accountId: string;
  readonly account: AccountRecord;
  readonly plan: Plan;
  readonly key: KeyInfo;
  /** Figures for the X-RateLimit-* headers, after counting this request. */
  readonly rateLimit: RateLimitStatus;
}

/** What the service needs to act for an account: a Caller, or `{ accountId }` from an admin. */
export type AccountRef = Pick<Caller, 'accountId'>;

/** A key as listed: everything but its hash. */
export type KeyInfo = Omit<KeyRecord, 'hash' | 'accountId'>;

/** An account with its credit balances. */
export interface AccountInfo extends AccountRecord {
  readonly credits: CreditBalance;
}

/** The account object of DESIGN 5.3, in its wire shape. */
export interface AccountObject {
  readonly email: string;
  readonly plan: PlanName;
  readonly credits: { readonly available: number; readonly used: number; readonly total: number };
  readonly rate_limit: { readonly per_minute: number; readonly remaining: number };
  readonly billing_period: { readonly start: string; readonly end: string };
}

export type FilterInfo = Omit<FilterRecord, 'accountId'>;

export interface FilterList {
  readonly filters: readonly FilterInfo[];
  readonly total: number;
  readonly page: number;
  readonly perPage: number;
}

export interface ServiceVerifyOptions {
  readonly method?: MethodName;
  readonly signal?: AbortSignal;
  /**
   * Makes a retry safe: the same id reserves and settles under the same ledger references,
   * so a request retried after a lost answer is verified again but charged once.
   */
  readonly requestId?: string | undefined;
}

export interface ServiceVerifyResult {
  readonly verdict: Verdict;
  /** Credits this verification cost: 0 for test addresses, filter matches and refunds. */
  readonly charged: number;
}

export interface LedgerReceipt {
  readonly entry: LedgerEntry;
  readonly balance: CreditBalance;
  readonly replayed: boolean;
}

export interface NewAccount {
  readonly email: string;
  readonly plan?: PlanName;
  /** Credits granted at creation. Default 0. */
  readonly credits?: number;
  /** Day of the month billing periods start (1-31). Default: today's day (UTC). */
  readonly billingAnchorDay?: number;
}

export interface NewKey {
  readonly kind?: KeyKind;
  readonly name?: string;
  /** Private keys: IPv4/IPv6 addresses or CIDR ranges it may be used from. */
  readonly allowedIps?: readonly string[];
  /** Public keys (required): `example.com` or `*.example.com`. */
  readonly trustedDomains?: readonly string[];
}

export interface NewFilter {
  readonly value: string;
  readonly type: FilterType;
  readonly action: FilterAction;
  readonly reason?: string;
}

/** Administration without HTTP: accounts, keys, credits and plans (DESIGN 5.1-5.3). */
export interface ServiceAdmin {
  createAccount(input: NewAccount): Promise<AccountInfo>;
  getAccount(accountId: string): Promise<AccountInfo>;
  changePlan(accountId: string, plan: PlanName): Promise<AccountInfo>;
  /** A top-up. Pass `ref` to make a retried top-up apply once. */
  grantCredits(
    accountId: string,
    amount: number,
    options?: { ref?: string; note?: string },
  ): Promise<LedgerReceipt>;
  /** Gives back credits of a reservation whose results could not be verified. */
  refund(
    accountId: string,
    input: { reservation: string; amount?: number; ref?: string; note?: string },
  ): Promise<LedgerReceipt>;
  /** Any ledger request (reserve/settle/release for batch work), refusals as ServiceErrors. */
  applyLedger(accountId: string, request: LedgerRequest): Promise<LedgerReceipt>;
  ledger(
    accountId: string,
    page?: { afterSeq?: number; limit?: number },
  ): Promise<readonly LedgerEntry[]>;
  /** Issues a key; `secret` is shown this once and never stored. */
  createKey(accountId: string, input?: NewKey): Promise<{ secret: string; key: KeyInfo }>;
  listKeys(accountId: string): Promise<readonly KeyInfo[]>;
  updateKey(
    accountId: string,
    keyId: string,
    changes: Pick<NewKey, 'name' | 'allowedIps' | 'trustedDomains'>,
  ): Promise<KeyInfo>;
  revokeKey(accountId: string, keyId: string): Promise<KeyInfo>;
  /**
   * Issues a replacement with the same settings; the old key stops working at once, or after
   * `graceSeconds` so that deployments can switch over.
   */
  rotateKey(
    accountId: string,
    keyId: string,
    options?: { graceSeconds?: number },
  ): Promise<{ secret: string; key: KeyInfo }>;
}

/** The verification API without HTTP (DESIGN 5): every refusal is a ServiceError. */
export interface Service {
  /** Identifies the key, enforces its IP allow-list or trusted domains, counts the request. */
  authenticate(request: AuthRequest): Promise<Caller>;
  /** Reserves the method's cost, verifies, settles (or refunds a result we could not get). */
  verify(
    caller: AccountRef,
    email: unknown,
    options?: ServiceVerifyOptions,
  ): Promise<ServiceVerifyResult>;
  /** The account object of DESIGN 5.3. */
  account(caller: Caller): Promise<AccountObject>;
  createFilter(caller: AccountRef, input: NewFilter): Promise<FilterInfo>;
  listFilters(
    caller: AccountRef,
    query?: { type?: FilterType; page?: number; perPage?: number },
  ): Promise<FilterList>;
  deleteFilter(caller: AccountRef, id: string): Promise<{ id: string; deleted: true }>;
  readonly admin: ServiceAdmin;
  readonly engine: Engine;
  readonly store: Store;
}

export const FILTERS_PER_PAGE = 25;
export const MAX_FILTERS_PER_PAGE = 100;
const FILTER_TYPES: readonly FilterType[] = ['email', 'domain', 'ip_address'];
const FILTER_ACTIONS: readonly FilterAction[] = ['block', 'allow'];
/** MX hosts whose addresses are matched against IP filters, as many as the prober tries. */
const MX_HOSTS_FOR_IP_FILTERS = 3;

/** Refuses a filter type that is not one of FILTER_TYPES, naming the field. */
function requireFilterType(type: unknown): asserts type is FilterType {
  if (!FILTER_TYPES.includes(type as FilterType)) {
    throw invalidRequest('filter_type', `filter_type must be one of ${FILTER_TYPES.join(', ')}`);
  }
}

/**
 * The service core: keys, plans and rate limits, credits, filters and accounts around an
 * engine, on any Store.
 *
 * @example
 * const service = createService({ engine: createEngine({ offline: true }), store: createMemoryStore() });
 * const account = await service.admin.createAccount({ email: 'ops@example.org', credits: 100 });
 * const { secret } = await service.admin.createKey(account.id);
 * const caller = await service.authenticate({ authorization: `Bearer ${secret}`, endpoint: 'verify' });
 * const { verdict, charged } = await service.verify(caller, 'alice@example.org', { method: 'quick' });
 */
export function createService(options: ServiceOptions): Service {
  const { engine, store } = options;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? cryptoRandomBytes;
  const rateLimits = createRateLimits(store, options.publicKeyDailyLimit ?? PUBLIC_KEY_DAILY_LIMIT);
  const newId = (prefix: string) => `${prefix}_${randomBase62(24, random)}`;

  async function accountOf(accountId: unknown): Promise<AccountRecord> {
    const id = requireText(accountId, 'account_id');
    const account = await store.getAccount(id);
    if (account === undefined) throw new ServiceError('not_found', `No account ${id}.`);
    return account;
  }

  async function accountInfo(account: AccountRecord): Promise<AccountInfo> {
    return { ...account, credits: await store.balance(account.id) };
  }

  async function ownKey(accountId: string, keyId: unknown): Promise<KeyRecord> {
    const id = requireText(keyId, 'key_id');
    const key = await store.getKey(id);
    if (key === undefined || key.accountId !== accountId) {
      throw new ServiceError('not_found', `No key ${id} on this account.`);
    }
    return key;
  }

  async function ledger(accountId: string, request: LedgerRequest): Promise<LedgerReceipt> {
    return receiptOf(await store.applyLedger(accountId, request, clock.now()));
  }

  async function insertKey(
    accountId: string,
    kind: KeyKind,
    settings: {
      name: string | null;
      allowedIps: readonly string[];
      trustedDomains: readonly string[];
    },
  ): Promise<{ secret: string; key: KeyInfo }> {
    const issued = issueKey(kind, random);
    const record: KeyRecord = {
      id: newId('key'),
      accountId,
      ...issued.stored,
      ...settings,
      createdAt: clock.now(),
      revokedAt: null,
      expiresAt: null,
    };
    await store.insertKey(record);
    return { secret: issued.secret, key: keyInfo(record) };
  }

  /** Email, then domain and parents, then IPs (DESIGN 5.4); a match's action decides. */
  async function matchFilter(
    accountId: string,
    parsed: ParsedAddress,
    signal: AbortSignal | undefined,
  ): Promise<FilterAction | undefined> {
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
    const ranges = await store.findFilters(accountId, 'ip_address');
    if (ranges.length === 0) return undefined;
    const ips = parsed.domainLiteral
      ? [literalIp(parsed.asciiDomain)].filter((ip) => ip !== undefined)
      : await mailHostIps(parsed.asciiDomain, signal);
    return mostSpecificRange(ranges, ips)?.action;
  }

  async function mailHostIps(domain: string, signal: AbortSignal | undefined): Promise<string[]> {
    const { dns } = engine;
    if (dns.offline === true || dns.addresses === undefined) return [];
    const hosts = mailHosts(await dns.mx(domain, signal)).slice(0, MX_HOSTS_FOR_IP_FILTERS);
    const lists = await Promise.all(
      hosts.map((host) => dns.addresses?.(host.exchange, signal) ?? []),
    );
    return lists.flat();
  }

  const admin: ServiceAdmin = {
    createAccount: (input) =>
      answering(async () => {
        if (typeof input !== 'object' || input === null)
          throw invalidRequest('account', 'expected an object');
        const parsedEmail = parseAddress(requireText(input.email, 'email', 254));
        if (!parsedEmail.ok)
          throw invalidRequest('email', `email is not valid: ${parsedEmail.message}`);
        const plan = input.plan ?? 'free';
        if (!isPlanName(plan))
          throw invalidRequest('plan', `plan must be one of ${PLAN_NAMES.join(', ')}`);
        const credits = requireInteger(input.credits ?? 0, 'credits', 0, 1_000_000_000_000);
        const now = clock.now();
        const billingAnchorDay = requireInteger(
          input.billingAnchorDay ?? new Date(now).getUTCDate(),
          'billing_anchor_day',
          1,
          31,
        );
        const account: AccountRecord = {
          id: newId('acct'),
          email: parsedEmail.address,
          plan,
          billingAnchorDay,
          webhookSecret: `whsec_${Buffer.from(random(32)).toString('base64')}`,
          createdAt: now,
        };
        await store.insertAccount(account);
        if (credits > 0) {
          await ledger(account.id, {
            kind: 'grant',
            ref: 'initial_grant',
            amount: credits,
            note: 'account created',
          });
        }
        return accountInfo(account);
      }),
    getAccount: (accountId) => answering(async () => accountInfo(await accountOf(accountId))),
    changePlan: (accountId, plan) =>
      answering(async () => {
        requireText(accountId, 'account_id');
        if (!isPlanName(plan))
          throw invalidRequest('plan', `plan must be one of ${PLAN_NAMES.join(', ')}`);
        const updated = await store.updateAccount(accountId, { plan });
        if (updated === undefined) throw new ServiceError('not_found', `No account ${accountId}.`);
        return accountInfo(updated);
      }),
    grantCredits: (accountId, amount, grant = {}) =>
      answering(async () => {
        requireText(accountId, 'account_id');
        return ledger(accountId, {
          kind: 'grant',
          ref: grant.ref ?? newId('grant'),
          amount: requireInteger(amount, 'amount', 1, 1_000_000_000_000),
          ...optional('note', grant.note),
        });
      }),
    refund: (accountId, input) =>
      answering(async () => {
        requireText(accountId, 'account_id');
        return ledger(accountId, {
          kind: 'refund',
          ref: input.ref ?? newId('refund'),
          reservation: requireText(input.reservation, 'reservation'),
          ...optional('amount', input.amount),
          ...optional('note', input.note),
        });
      }),
    applyLedger: (accountId, request) =>
      answering(async () => {
        requireText(accountId, 'account_id');
        return ledger(accountId, request);
      }),
    ledger: (accountId, page) =>
      answering(async () => {
        await accountOf(accountId);
        return store.ledgerEntries(accountId, page);
      }),
    createKey: (accountId, input = {}) =>
      answering(async () => {
        await accountOf(accountId);
        const kind = input.kind ?? 'private';
        if (kind !== 'private' && kind !== 'public') {
          throw invalidRequest('kind', 'kind must be private or public');
        }
        return insertKey(accountId, kind, keySettings(kind, input, undefined));
      }),
    listKeys: (accountId) =>
      answering(async () => {
        await accountOf(accountId);
        return (await store.listKeys(accountId)).map(keyInfo);
      }),
    updateKey: (accountId, keyId, changes) =>
      answering(async () => {
        const key = await ownKey(accountId, keyId);
        const settings = keySettings(key.kind, changes, key);
        return keyInfo((await store.updateKey(key.id, settings)) ?? key);
      }),
    revokeKey: (accountId, keyId) =>
      answering(async () => {
        const key = await ownKey(accountId, keyId);
        if (key.revokedAt !== null) return keyInfo(key);
        return keyInfo((await store.updateKey(key.id, { revokedAt: clock.now() })) ?? key);
      }),
    rotateKey: (accountId, keyId, rotation = {}) =>
      answering(async () => {
        const key = await ownKey(accountId, keyId);
        if (!isActive(key, clock.now())) {
          throw new ServiceError(
            'conflict',
            `Key ${key.id} is revoked or expired; create a new one.`,
          );
        }
        const graceSeconds = requireInteger(
          rotation.graceSeconds ?? 0,
          'grace_seconds',
          0,
          30 * 86_400,
        );
        const replacement = await insertKey(accountId, key.kind, {
          name: key.name,
          allowedIps: key.allowedIps,
          trustedDomains: key.trustedDomains,
        });
        const now = clock.now();
        await store.updateKey(
          key.id,
          graceSeconds === 0 ? { revokedAt: now } : { expiresAt: now + graceSeconds * 1000 },
        );
        return replacement;
      }),
  };

  return {
    engine,
    store,
    admin,

    authenticate: (request) =>
      answering(async () => {
        const secret = presentedKey(request.authorization, request.apiKey);
        if (secret === undefined) {
          throw new ServiceError(
            'unauthorized',
            'No API key: send Authorization: Bearer <key> or the api_key parameter.',
          );
        }
        const key =
          keyKind(secret) === undefined ? undefined : await store.findKeyByHash(hashKey(secret));
        const now = clock.now();
        if (key === undefined || !isActive(key, now)) {
          throw new ServiceError('unauthorized', 'The API key is unknown, revoked or expired.');
        }
        const account = await store.getAccount(key.accountId);
        if (account === undefined)
          throw new ServiceError('unauthorized', 'The API key is unknown, revoked or expired.');
        const endUser = admitClient(key, request);
        const plan = PLANS[account.plan];
        const rateLimit = await rateLimits.admit(key.id, plan, endUser);
        return { accountId: account.id, account, plan, key: keyInfo(key), rateLimit };
      }),

    verify: (caller, email, verifyOptions = {}) =>
      answering(async () => {
        if (typeof email !== 'string') throw invalidRequest('email', 'email must be a string');
        const method = verifyOptions.method ?? 'standard';
        if (!METHOD_NAMES.includes(method)) {
          throw invalidRequest('method', `method must be one of ${METHOD_NAMES.join(', ')}`);
        }
        const { signal } = verifyOptions;
        const parsed = engine.parse(email);
        if (parsed.ok) {
          const fixed = testAddressVerdict(parsed);
          if (fixed !== undefined) {
            // The engine's own answer for a test address, without parsing it a second time.
            if (signal?.aborted) throw signal.reason;
            return {
              verdict: fixedVerdict(email, parsed, method, fixed, 'test_address'),
              charged: 0,
            };
          }
          const action = await matchFilter(caller.accountId, parsed, signal);
          if (action !== undefined) {
            return {
              verdict: fixedVerdict(email, parsed, method, FILTER_VERDICTS[action], 'filter'),
              charged: 0,
            };
          }
        }
        const requestId =
          verifyOptions.requestId === undefined
            ? newId('req')
            : requireText(verifyOptions.requestId, 'request_id', 100);
        const reservation = `verify:${requestId}`;
        const cost = engine.cost(method);
        const reserved = await ledger(caller.accountId, {
          kind: 'reserve',
          ref: reservation,
          amount: cost,
        });
        let verdict: Verdict;
        try {
          verdict = await engine.verify(email, { method, ...optional('signal', signal) });
        } catch (error) {
          // Aborted or failed: nothing was learned, nothing is charged.
          await close({ kind: 'release', ref: `${reservation}:release`, reservation });
          throw error;
        }
        if (reserved.replayed) {
          // A retry: the first attempt's charge or refund stands; a hold it left behind (a
          // crash between reserve and settle) goes back to the account.
          await close({ kind: 'release', ref: `${reservation}:release`, reservation });
          return { verdict, charged: 0 };
        }
        if (UNKNOWN_REASONS.has(verdict.reason)) {
          await close({
            kind: 'refund',
            ref: `${reservation}:refund`,
            reservation,
            note: verdict.reason,
          });
          return { verdict, charged: 0 };
        }
        await close({ kind: 'settle', ref: `${reservation}:settle`, reservation, amount: cost });
        return { verdict, charged: cost };

        /** Files the closing entry; a reservation with nothing left to close is fine. */
        async function close(request: LedgerRequest): Promise<void> {
          const outcome = await store.applyLedger(caller.accountId, request, clock.now());
          if (!outcome.ok && outcome.code === 'exceeds_reservation') return;
          receiptOf(outcome);
        }
      }),

    account: (caller) =>
      answering(async () => {
        const account = await accountOf(caller.accountId);
        const plan = PLANS[account.plan];
        const [credits, rate] = await Promise.all([
          store.balance(account.id),
          rateLimits.status(caller.key.id, plan),
        ]);
        const period = billingPeriod(account.billingAnchorDay, clock.now());
        return {
          email: account.email,
          plan: account.plan,
          credits: { available: credits.available, used: credits.used, total: credits.total },
          rate_limit: { per_minute: plan.perMinute, remaining: rate.remaining },
          billing_period: {
            start: new Date(period.start).toISOString(),
            end: new Date(period.end).toISOString(),
          },
        };
      }),

    createFilter: (caller, input) =>
      answering(async () => {
        if (typeof input !== 'object' || input === null)
          throw invalidRequest('filter', 'expected an object');
        requireFilterType(input.type);
        if (!FILTER_ACTIONS.includes(input.action)) {
          throw invalidRequest('action', 'action must be block or allow');
        }
        const normalized = normalizeFilterValue(
          input.type,
          requireText(input.value, 'value', 1024),
        );
        if (!normalized.ok) throw invalidRequest('value', normalized.message);
        const record: FilterRecord = {
          id: newId('flt'),
          accountId: caller.accountId,
          type: input.type,
          value: normalized.value,
          action: input.action,
          reason: optionalText(input.reason, 'reason', 500),
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

    listFilters: (caller, query = {}) =>
      answering(async () => {
        if (query.type !== undefined) requireFilterType(query.type);
        const page = requireInteger(query.page ?? 1, 'page', 1, 1_000_000);
        const perPage = requireInteger(
          query.perPage ?? FILTERS_PER_PAGE,
          'per_page',
          1,
          MAX_FILTERS_PER_PAGE,
        );
        const found = await store.listFilters(caller.accountId, {
          ...optional('type', query.type),
          offset: (page - 1) * perPage,
          limit: perPage,
        });
        return { filters: found.filters.map(filterInfo), total: found.total, page, perPage };
      }),

    deleteFilter: (caller, id) =>
      answering(async () => {
        const filterId = requireText(id, 'id');
        if (!(await store.deleteFilter(caller.accountId, filterId))) {
          throw new ServiceError('not_found', `No filter ${filterId}.`);
        }
        return { id: filterId, deleted: true as const };
      }),
  };
}

/**
 * Checks where a request comes from against its key: a private key's IP allow-list, or a
 * public key's trusted domains and endpoint. Returns the end user a public key's daily
 * per-client limit counts (undefined for private keys).
 */
function admitClient(key: KeyRecord, request: AuthRequest): string | undefined {
  if (key.kind === 'private') {
    if (key.allowedIps.length > 0) {
      const ip = request.clientIp ?? '';
      if (!key.allowedIps.some((range) => ipInRange(ip, range))) {
        throw new ServiceError(
          'forbidden',
          "The client's IP address is not on this key's allow-list.",
        );
      }
    }
    return undefined;
  }
  if (request.endpoint !== 'verify') {
    throw new ServiceError(
      'forbidden',
      'A public key may only verify single addresses; use a private key.',
    );
  }
  const host = requestHost(request.origin, request.referer);
  if (host === undefined || !hostTrusted(host, key.trustedDomains)) {
    throw new ServiceError(
      'forbidden',
      "The page's origin is not one of this key's trusted domains.",
    );
  }
  const endUser = clientKey(request.clientIp ?? '');
  if (endUser === undefined) {
    throw new ServiceError(
      'forbidden',
      'A public key needs the client IP address to limit its use.',
    );
  }
  return endUser;
}

function keySettings(
  kind: KeyKind,
  input: Pick<NewKey, 'name' | 'allowedIps' | 'trustedDomains'>,
  current: KeyRecord | undefined,
): { name: string | null; allowedIps: readonly string[]; trustedDomains: readonly string[] } {
  const name =
    input.name === undefined ? (current?.name ?? null) : optionalText(input.name, 'name');
  const allowedIps =
    input.allowedIps === undefined
      ? (current?.allowedIps ?? [])
      : requireList(input.allowedIps, 'allowed_ips', canonicalRange, 'IP address or CIDR range');
  const trustedDomains =
    input.trustedDomains === undefined
      ? (current?.trustedDomains ?? [])
      : requireList(
          input.trustedDomains,
          'trusted_domains',
          canonicalTrustedDomain,
          'domain pattern',
        );
  if (kind === 'private' && trustedDomains.length > 0) {
    throw invalidRequest('trusted_domains', 'trusted_domains apply to public keys only');
  }
  if (kind === 'public' && allowedIps.length > 0) {
    throw invalidRequest('allowed_ips', 'allowed_ips apply to private keys only');
  }
  if (kind === 'public' && trustedDomains.length === 0) {
    throw invalidRequest('trusted_domains', 'a public key needs at least one trusted domain');
  }
  return { name, allowedIps, trustedDomains };
}

function isActive(key: KeyRecord, now: number): boolean {
  return (
    (key.revokedAt === null || key.revokedAt > now) &&
    (key.expiresAt === null || key.expiresAt > now)
  );
}

function keyInfo({ hash: _hash, accountId: _accountId, ...info }: KeyRecord): KeyInfo {
  return info;
}

function filterInfo({ accountId: _accountId, ...info }: FilterRecord): FilterInfo {
  return info;
}

/** The longest matching range wins; between equally long ones, block wins over allow. */
function mostSpecificRange(
  ranges: readonly FilterRecord[],
  ips: readonly string[],
): FilterRecord | undefined {
  let best: FilterRecord | undefined;
  let bestBits = -1;
  for (const range of ranges) {
    if (!ips.some((ip) => ipInRange(ip, range.value))) continue;
    const bits = rangeBits(range.value);
    if (bits > bestBits || (bits === bestBits && range.action === 'block')) {
      best = range;
      bestBits = bits;
    }
  }
  return best;
}

function receiptOf(outcome: LedgerOutcome): LedgerReceipt {
  if (outcome.ok) {
    return { entry: outcome.entry, balance: outcome.balance, replayed: outcome.replayed };
  }
  switch (outcome.code) {
    case 'insufficient_credits':
      throw new ServiceError(
        'insufficient_credits',
        `Not enough credits: ${outcome.needed} needed, ${outcome.available} available.`,
        { needed: outcome.needed, available: outcome.available },
      );
    case 'unknown_reservation':
      throw new ServiceError('not_found', `No reservation ${outcome.reservation}.`, {
        field: 'reservation',
      });
    case 'exceeds_reservation':
      throw invalidRequest(
        'amount',
        `amount exceeds what the reservation holds (${outcome.limit})`,
      );
    case 'reference_conflict':
      throw new ServiceError(
        'conflict',
        `Reference ${outcome.existing.ref} was used for a different request.`,
        { ref: outcome.existing.ref },
      );
  }
}
