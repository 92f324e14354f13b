import { getDomain } from 'tldts';
import { parseDomain } from '../address/domain.js';

const ANY_HOST_RULES = { allowDomainLiteral: false, globallyDeliverable: false } as const;

/**
 * Normalizes a public key's trusted-domain pattern: `example.com` (that host only) or
 * `*.example.com` (its subdomains, not the domain itself), IDN to A-labels, lowercase; pages
 * served over https only, unless the pattern is written with `http://` (kept: pages on http
 * too), for plain http lets anyone on the network between the page and its visitor run a page
 * of the key's. `https://` may be written, and is the default. Undefined when the pattern is
 * none of these, or names a public suffix: `com`, `*.com`, `*.co.uk` or `*.github.io` would
 * trust pages anyone can put up.
 */
export function canonicalTrustedDomain(pattern: string): string | undefined {
  const { http, domain } = schemeOf(pattern);
  const wildcard = domain.startsWith('*.');
  const parsed = parseDomain(wildcard ? domain.slice(2) : domain, ANY_HOST_RULES);
  if (!parsed.ok || parsed.literal || isPublicSuffix(parsed.ascii)) return undefined;
  const canonical = wildcard ? `*.${parsed.ascii}` : parsed.ascii;
  return http ? `${HTTP}${canonical}` : canonical;
}

/** What a stored pattern starts with when it trusts pages served over plain http too. */
const HTTP = 'http://';
const HTTPS = 'https://';

/** A pattern's scheme, if written (`http://`, `https://`, any case), and its domain part. */
function schemeOf(pattern: string): { http: boolean; domain: string } {
  const start = pattern.slice(0, HTTPS.length).toLowerCase();
  // One trailing slash is how an origin is often pasted: `https://shop.example.com/`.
  const withoutSlash = (rest: string) => (rest.endsWith('/') ? rest.slice(0, -1) : rest);
  if (start.startsWith(HTTP))
    return { http: true, domain: withoutSlash(pattern.slice(HTTP.length)) };
  if (start === HTTPS) return { http: false, domain: withoutSlash(pattern.slice(HTTPS.length)) };
  return { http: false, domain: pattern };
}

/**
 * Whether `host` (lowercase A-labels) is a public suffix: it has no registrable domain under
 * the public suffix list, private section included (github.io hands out its subdomains to
 * anyone, as co.uk does). A name under no listed suffix follows the list's default rule, so a
 * single label (`localhost`, `intranet`) counts as a suffix too.
 */
export function isPublicSuffix(host: string): boolean {
  return getDomain(host, { allowPrivateDomains: true, extractHostname: false }) === null;
}

/** The page that made a browser request, as its trust is judged: its host and its scheme. */
export interface PageOrigin {
  /** Lowercase, A-labels, no trailing dot, no port (WHATWG URL parsing gives that form). */
  readonly host: string;
  /** Served over https. */
  readonly secure: boolean;
}

/**
 * The page that made a browser request: its `Origin` when the request carries one, which alone
 * then decides; else its `Referer` (browsers omit Origin on some same-origin GETs). Only http(s)
 * pages count: an opaque origin (`null`: a sandboxed iframe, a `data:` page, a file) or any
 * other scheme is no page of anyone's domain, whatever its Referer says.
 */
export function requestOrigin(
  origin: string | null | undefined,
  referer: string | null | undefined,
): PageOrigin | undefined {
  return origin === null || origin === undefined ? pageOf(referer) : pageOf(origin);
}

function pageOf(url: string | null | undefined): PageOrigin | undefined {
  if (url === null || url === undefined || url === '' || url === 'null') return undefined;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return undefined;
    const { hostname } = parsed;
    return {
      host: hostname.endsWith('.') ? hostname.slice(0, -1) : hostname,
      secure: parsed.protocol === 'https:',
    };
  } catch {
    return undefined;
  }
}

/**
 * Whether the page is trusted by one of the canonical patterns: its host matches the domain,
 * and it is served over https, or the pattern was written with `http://`. A pattern naming a
 * public suffix trusts nothing, even if stored before such patterns were refused.
 */
export function originTrusted(page: PageOrigin, patterns: readonly string[]): boolean {
  return patterns.some((stored) => {
    const http = stored.startsWith(HTTP);
    if (!page.secure && !http) return false;
    const pattern = http ? stored.slice(HTTP.length) : stored;
    const wildcard = pattern.startsWith('*.');
    const matches = wildcard ? page.host.endsWith(pattern.slice(1)) : page.host === pattern;
    return matches && !isPublicSuffix(wildcard ? pattern.slice(2) : pattern);
  });
}
