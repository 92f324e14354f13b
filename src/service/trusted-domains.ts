import { getDomain } from 'tldts';
import { parseDomain } from '../address/domain.js';

const ANY_HOST_RULES = { allowDomainLiteral: false, globallyDeliverable: false } as const;

/**
 * Normalizes a public key's trusted-domain pattern: `example.com` (that host only) or
 * `*.example.com` (its subdomains, not the domain itself), IDN to A-labels, lowercase.
 * Undefined when the pattern is neither, or names a public suffix: `com`,
 * `*.com`, `*.co.uk` or `*.github.io` would trust pages anyone can put up.
 */
export function canonicalTrustedDomain(pattern: string): string | undefined {
  const wildcard = pattern.startsWith('*.');
  const parsed = parseDomain(wildcard ? pattern.slice(2) : pattern, ANY_HOST_RULES);
  if (!parsed.ok || parsed.literal || isPublicSuffix(parsed.ascii)) return undefined;
  return wildcard ? `*.${parsed.ascii}` : parsed.ascii;
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

/**
 * The host of the page that made a browser request: from `Origin`, else from `Referer`
 * (browsers omit Origin on some same-origin GETs). Only http(s) pages count; an opaque
 * origin (`null`) or garbage yields undefined. WHATWG URL parsing lowercases the host and
 * turns IDN into A-labels, the form trusted domains are stored in.
 */
export function requestHost(
  origin: string | null | undefined,
  referer: string | null | undefined,
): string | undefined {
  return hostOf(origin) ?? hostOf(referer);
}

function hostOf(url: string | null | undefined): string | undefined {
  if (url === null || url === undefined || url === '' || url === 'null') return undefined;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return undefined;
    return parsed.hostname.endsWith('.') ? parsed.hostname.slice(0, -1) : parsed.hostname;
  } catch {
    return undefined;
  }
}

/**
 * Whether `host` is trusted by one of the canonical patterns. A pattern naming a public suffix
 * trusts nothing, even if stored before such patterns were refused.
 */
export function hostTrusted(host: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => {
    const wildcard = pattern.startsWith('*.');
    const matches = wildcard ? host.endsWith(pattern.slice(1)) : host === pattern;
    return matches && !isPublicSuffix(wildcard ? pattern.slice(2) : pattern);
  });
}
