import type { AccountRecord, KeyChanges, KeyRecord } from '../ports/store.js';
import { hashKey, issueKey, keyKind, presentedKey, type KeyKind } from './api-keys.js';
import { accountOf, type ServiceContext } from './context.js';
import { type KnownKey } from './key-cache.js';
import { canonicalRange, clientKey, ipInRange } from './ip-ranges.js';
import { PLANS, type Plan } from './plans.js';
import type { RateLimitStatus } from './rate-limit-status.js';
import { invalidRequest, ServiceError } from './service-error.js';
import { canonicalTrustedDomain, originTrusted, requestOrigin } from './trusted-domains.js';
import {
  answering,
  optionalHeader,
  optionalObject,
  optionalText,
  requireInteger,
  requireList,
  requireObject,
  requireOneOf,
  requireText,
} from './validate.js';

/** The endpoints of the /v1 API a key may call; public keys may call `verify` only. */
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

export interface NewKey {
  readonly kind?: KeyKind;
  readonly name?: string;
  /** Private keys: IPv4/IPv6 addresses or CIDR ranges it may be used from. */
  readonly allowedIps?: readonly string[];
  /** Public keys (required): `example.com` or `*.example.com`. */
  readonly trustedDomains?: readonly string[];
}

/** Key management of the admin API: create, list, update, revoke, rotate. */
export interface KeyAdmin {
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

/** Authentication, and the keys it checks (docs/architecture.md, "Keys, plans and rate limits"). */
export interface Auth {
  /** Identifies the key, enforces its IP allow-list or trusted domains, counts the request. */
  authenticate(request: AuthRequest): Promise<Caller>;
  /**
   * The rate-limit figures of the active key a request presents, without counting the
   * request or checking where it comes from: for the answer to a request refused before it
   * was authenticated (a malformed parameter), which carries them as every answer to a known
   * key does. Undefined when no key is presented, or an unknown, revoked or expired one.
   */
  rateLimitStatus(
    request: Pick<AuthRequest, 'authorization' | 'apiKey'>,
  ): Promise<RateLimitStatus | undefined>;
  readonly keys: KeyAdmin;
}

export function createAuth(ctx: ServiceContext): Auth {
  const { store, clock, random } = ctx;

  async function ownKey(accountId: unknown, keyId: unknown): Promise<KeyRecord> {
    requireText(accountId, 'account_id');
    const id = requireText(keyId, 'key_id');
    const key = await store.getKey(id);
    if (key === undefined || key.accountId !== accountId) {
      throw new ServiceError('not_found', `No key ${id} on this account.`);
    }
    return key;
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
      id: ctx.newId('key'),
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

  /** A key and its account, from the cache or the store; undefined if either is missing. */
  async function knownKey(hash: string): Promise<KnownKey | undefined> {
    const cached = ctx.keyCache.get(hash);
    if (cached !== undefined) return cached;
    const generation = ctx.keyCache.generation();
    const key = await store.findKeyByHash(hash);
    if (key === undefined) return undefined;
    const account = await store.getAccount(key.accountId);
    if (account === undefined) return undefined;
    const known = { key, account };
    ctx.keyCache.set(hash, known, generation);
    return known;
  }

  /** Writes a key's change; the cache forgets it, and any read in flight is not kept. */
  async function changeKey(
    id: string,
    changes: Parameters<typeof store.updateKey>[1],
  ): Promise<KeyRecord | undefined> {
    try {
      return await store.updateKey(id, changes);
    } finally {
      ctx.keyCache.clear();
    }
  }

  const keys: KeyAdmin = {
    createKey: (accountId, input) =>
      answering(async () => {
        await accountOf(ctx, accountId);
        const fields = optionalObject(input, 'key');
        const kind =
          fields.kind === undefined ? 'private' : requireOneOf(fields.kind, 'kind', KEY_KINDS);
        return insertKey(accountId, kind, keySettings(kind, fields, undefined));
      }),
    listKeys: (accountId) =>
      answering(async () => {
        await accountOf(ctx, accountId);
        return (await store.listKeys(accountId)).map(keyInfo);
      }),
    updateKey: (accountId, keyId, changes) =>
      answering(async () => {
        const key = await ownKey(accountId, keyId);
        const fields = requireObject(changes, 'changes');
        const settings = keySettings(key.kind, fields, key);
        // Only what was given is written: an update running beside this one keeps its change
        // (the settings as a whole were checked against the key as read).
        const given: KeyChanges = {
          ...(fields.name === undefined ? {} : { name: settings.name }),
          ...(fields.allowedIps === undefined ? {} : { allowedIps: settings.allowedIps }),
          ...(fields.trustedDomains === undefined
            ? {}
            : { trustedDomains: settings.trustedDomains }),
        };
        return keyInfo((await changeKey(key.id, given)) ?? key);
      }),
    revokeKey: (accountId, keyId) =>
      answering(async () => {
        const key = await ownKey(accountId, keyId);
        if (key.revokedAt !== null) return keyInfo(key);
        return keyInfo((await changeKey(key.id, { revokedAt: clock.now() })) ?? key);
      }),
    rotateKey: (accountId, keyId, rotation) =>
      answering(async () => {
        const key = await ownKey(accountId, keyId);
        const options = optionalObject(rotation, 'options');
        if (!isActive(key, clock.now())) {
          throw new ServiceError(
            'conflict',
            `Key ${key.id} is revoked or expired; create a new one.`,
          );
        }
        const graceSeconds =
          options.graceSeconds === undefined
            ? 0
            : requireInteger(options.graceSeconds, 'grace_seconds', 0, 30 * 86_400);
        const replacement = await insertKey(accountId, key.kind, {
          name: key.name,
          allowedIps: key.allowedIps,
          trustedDomains: key.trustedDomains,
        });
        const now = clock.now();
        // A grace period only ever shortens: rotating again during one (a retried deployment,
        // a second rotation) must not keep a leaked old key alive longer.
        // The store takes the earlier of the two ends in its own update: two rotations at
        // once cannot both read "no end yet" and let the later write extend the period.
        await changeKey(
          key.id,
          graceSeconds === 0 ? { revokedAt: now } : { expiresAtMost: now + graceSeconds * 1000 },
        );
        return replacement;
      }),
  };

  /** The key a secret names and its account, if the key is active; else undefined. */
  async function activeKey(secret: string): Promise<KnownKey | undefined> {
    if (keyKind(secret) === undefined) return undefined;
    const known = await knownKey(hashKey(secret));
    return known !== undefined && isActive(known.key, clock.now()) ? known : undefined;
  }

  return {
    keys,
    rateLimitStatus: (input) =>
      answering(async () => {
        const fields = requireObject(input, 'request');
        const secret = presentedKey(
          optionalHeader(fields.authorization, 'authorization'),
          optionalHeader(fields.apiKey, 'api_key'),
        );
        const known = secret === undefined ? undefined : await activeKey(secret);
        return known === undefined
          ? undefined
          : ctx.rateLimits.status(known.key.id, PLANS[known.account.plan]);
      }),
    authenticate: (input) =>
      answering(async () => {
        const request = authRequest(input);
        const secret = presentedKey(request.authorization, request.apiKey);
        if (secret === undefined) {
          throw new ServiceError(
            'unauthorized',
            'No API key: send Authorization: Bearer <key> or the api_key parameter.',
          );
        }
        const known = await activeKey(secret);
        if (known === undefined) {
          throw new ServiceError('unauthorized', 'The API key is unknown, revoked or expired.');
        }
        const { key, account } = known;
        const plan = PLANS[account.plan];
        const refusal = clientRefusal(key, request);
        if (refusal !== undefined) {
          // The key is known, so its figures go on the refusal as on every answer to it; a
          // client the key does not admit is not counted against it.
          const rateLimit = await ctx.rateLimits.status(key.id, plan);
          throw new ServiceError('forbidden', refusal, {}, { rateLimit });
        }
        const endUser = key.kind === 'public' ? clientKey(request.clientIp ?? '') : undefined;
        const rateLimit = await ctx.rateLimits.admit(key.id, plan, endUser);
        // Copies: the key and account are the cache's, which a host's change must not reach.
        return {
          accountId: account.id,
          account: { ...account },
          plan,
          key: keyInfo(key),
          rateLimit,
        };
      }),
  };
}

const ENDPOINTS: readonly Endpoint[] = ['verify', 'batch', 'account', 'filters'];
const KEY_KINDS: readonly KeyKind[] = ['private', 'public'];

/** The request's fields checked before any is read: each a header's value, or absent. */
function authRequest(input: unknown): AuthRequest {
  const fields = requireObject(input, 'request');
  return {
    endpoint: requireOneOf(fields.endpoint, 'endpoint', ENDPOINTS),
    authorization: optionalHeader(fields.authorization, 'authorization') ?? null,
    apiKey: optionalHeader(fields.apiKey, 'api_key') ?? null,
    clientIp: optionalHeader(fields.clientIp, 'client_ip') ?? null,
    origin: optionalHeader(fields.origin, 'origin') ?? null,
    referer: optionalHeader(fields.referer, 'referer') ?? null,
  };
}

/**
 * Checks where a request comes from against its key: a private key's IP allow-list, or a
 * public key's trusted domains, endpoint and client IP (a public key's daily per-client limit
 * counts that IP). Returns why the key refuses the request, or undefined when it admits it.
 */
function clientRefusal(key: KeyRecord, request: AuthRequest): string | undefined {
  if (key.kind === 'private') {
    const ip = request.clientIp ?? '';
    return key.allowedIps.length === 0 || key.allowedIps.some((range) => ipInRange(ip, range))
      ? undefined
      : "The client's IP address is not on this key's allow-list.";
  }
  if (request.endpoint !== 'verify') {
    return 'A public key may only verify single addresses; use a private key.';
  }
  const page = requestOrigin(request.origin, request.referer);
  if (page === undefined || !originTrusted(page, key.trustedDomains)) {
    return "The page's origin is not one of this key's trusted domains.";
  }
  if (clientKey(request.clientIp ?? '') === undefined) {
    return 'A public key needs the client IP address to limit its use.';
  }
  return undefined;
}

function keySettings(
  kind: KeyKind,
  input: Readonly<Record<string, unknown>>,
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

/** A key as listed, its lists copied: what a host changes in it changes nothing stored. */
function keyInfo({ hash: _hash, accountId: _accountId, ...info }: KeyRecord): KeyInfo {
  return {
    ...info,
    allowedIps: [...info.allowedIps],
    trustedDomains: [...info.trustedDomains],
  };
}
