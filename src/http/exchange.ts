import { presentedKey } from '../service/api-keys.js';
import type { RateLimitStatus } from '../service/rate-limit-status.js';
import { ServiceError } from '../service/service-error.js';
import type { Caller, Endpoint, Service } from '../service/service.js';
import { resolveClientIp } from './client-ip.js';
import { onlyFields, readJsonObject, type BodyLimits } from './request-body.js';
import { badRequest } from './responses.js';

/**
 * What the handler reads of a request: a web Request has all of it, and mailverdict/node
 * passes a lighter stand-in with just these (a Request with a signal costs 50 us to build on
 * Node 20, measured: more than a verify).
 */
export type HandlerRequest = Pick<Request, 'url' | 'method' | 'headers' | 'body' | 'signal'>;

/** The handler's settings, resolved once (see HandlerOptions). */
export interface HandlerConfig {
  readonly baseUrl: string | undefined;
  readonly defaultBaseUrl: string | undefined;
  readonly clientIp: (request: HandlerRequest) => string | undefined;
  readonly trustedProxies: readonly string[];
  readonly cors: boolean;
  readonly body: BodyLimits;
}

const NO_PARAMETERS: ReadonlyMap<string, string> = new Map();

/** One request on its way through the handler, and what it learned about its caller. */
export class Exchange {
  /** Set once the key is identified and admitted. */
  caller: Caller | undefined;
  /**
   * The identified key's X-RateLimit figures, from authenticate (a refusal by a known key
   * carries them too): the handler's finish puts them on the answer, whatever it is.
   */
  rateLimit: RateLimitStatus | undefined;
  /** Whether authenticate ran: its outcome, not a second look-up, says who the key is. */
  authenticated = false;
  /** The page origin a public key's answer may be read by (CORS), once the key admitted it. */
  corsOrigin: string | undefined;
  /** The query parameters, each one its operation takes (routes.ts), read before the route. */
  query: ReadonlyMap<string, string> = NO_PARAMETERS;

  constructor(
    readonly request: HandlerRequest,
    readonly url: URL,
    readonly service: Service,
    readonly config: HandlerConfig,
  ) {}

  #clientIp: string | null | undefined;

  /**
   * The client's IP: the peer address the host reports, or through a trusted proxy the first
   * untrusted hop of X-Forwarded-For; null when the host reports none.
   */
  get clientIp(): string | null {
    if (this.#clientIp === undefined) {
      this.#clientIp =
        resolveClientIp(
          this.config.clientIp(this.request),
          this.request.headers.get('x-forwarded-for'),
          this.config.trustedProxies,
        ) ?? null;
    }
    return this.#clientIp;
  }

  /**
   * Authenticates the key the request presents (the bearer header, else `api_key`), from the
   * client IP the host reports (X-Forwarded-For only through a trusted proxy) and the page's
   * Origin or Referer, and counts it against the key's rate limits.
   */
  async authenticate(endpoint: Endpoint, apiKey: string | undefined): Promise<Caller> {
    this.authenticated = true;
    const { headers } = this.request;
    const authorization = headers.get('authorization');
    const bearer = oneKey(authorization, apiKey);
    const origin = headers.get('origin');
    try {
      this.caller = await this.service.authenticate({
        endpoint,
        authorization,
        apiKey: apiKey ?? null,
        clientIp: this.clientIp,
        origin,
        referer: headers.get('referer'),
      });
    } catch (error) {
      if (error instanceof ServiceError) this.rateLimit = error.rateLimit;
      // A public key refuses an untrusted page before counting it: a 429 to a public key was
      // to a trusted page, whose visitor may read why.
      if (
        this.config.cors &&
        isPublicKey(bearer ?? apiKey) &&
        origin !== null &&
        isRateLimit(error)
      ) {
        this.corsOrigin = origin;
      }
      throw error;
    }
    this.rateLimit = this.caller.rateLimit;
    if (this.caller.key.kind === 'public' && origin !== null && this.config.cors) {
      this.corsOrigin = origin;
    }
    return this.caller;
  }

  /**
   * The request's JSON body, holding only `fields` (another is a 400 naming it). Read only once
   * the caller is admitted: a request without a valid key, or over its key's limits, is
   * refused before a byte of its body is read, so that it costs no memory and no parsing.
   */
  async jsonBody(fields: readonly string[]): Promise<Record<string, unknown>> {
    if (this.caller === undefined) {
      throw new Error('A request body is read only once its caller is authenticated.');
    }
    const body = await readJsonObject(this.request, this.config.body);
    onlyFields(body, fields);
    return body;
  }

  /**
   * The figures of the key the request presents when it was refused before authenticate ran
   * (a malformed parameter, an unknown route): looked up without counting the request, so a
   * malformed request still costs nothing. Undefined for no key, an unknown one, two that
   * differ, or a store that fails (the refusal is answered without them).
   */
  async uncountedRateLimit(): Promise<RateLimitStatus | undefined> {
    const authorization = this.request.headers.get('authorization');
    const apiKeys = this.url.searchParams.getAll('api_key');
    if (apiKeys.length > 1) return undefined;
    try {
      oneKey(authorization, apiKeys[0]);
      return await this.service.rateLimitStatus({ authorization, apiKey: apiKeys[0] ?? null });
    } catch {
      return undefined;
    }
  }
}

/**
 * The bearer key of `authorization`, after checking that an `api_key` given beside it is the
 * same key: two different keys are a 400, since neither may be picked silently.
 */
function oneKey(authorization: string | null, apiKey: string | undefined): string | undefined {
  // The bearer key alone (presentedKey falls back to api_key when there is none).
  const bearer = presentedKey(authorization, undefined);
  if (bearer !== undefined && apiKey !== undefined && apiKey !== '' && apiKey !== bearer) {
    throw badRequest(
      'api_key',
      'Two different API keys: send one, as the bearer header or as api_key.',
    );
  }
  return bearer;
}

function isPublicKey(secret: string | undefined): boolean {
  return secret?.startsWith('mv_pk_') === true;
}

function isRateLimit(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'rate_limit_exceeded';
}
