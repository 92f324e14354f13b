import { parseDomain } from '../address/domain.js';
import { parseAddress, type ParsedAddress } from '../address/parse.js';
import type { FilterType } from '../ports/store.js';
import { canonicalRange } from './ip-ranges.js';

const ANY_DOMAIN_RULES = { allowDomainLiteral: false, globallyDeliverable: false } as const;

/**
 * A filter value in the one form it is stored and matched in, or a message saying why it is
 * not one (docs/architecture.md, "Filters"): emails through the same parser as verification,
 * lowercased (mailbox names are case-insensitive at practically every provider, and a filter that
 * `Bob@` slips past is no filter); domains as lowercase A-labels (a leading `@` is tolerated); IPs
 * canonical, CIDR ranges by their network address.
 */
export function normalizeFilterValue(
  type: FilterType,
  value: string,
): { ok: true; value: string } | { ok: false; message: string } {
  switch (type) {
    case 'email': {
      const parsed = parseAddress(value);
      return parsed.ok
        ? { ok: true, value: emailKey(parsed) }
        : { ok: false, message: `value is not a valid email address: ${parsed.message}` };
    }
    case 'domain': {
      const parsed = parseDomain(value.startsWith('@') ? value.slice(1) : value, ANY_DOMAIN_RULES);
      if (!parsed.ok)
        return { ok: false, message: `value is not a valid domain: ${parsed.message}` };
      if (parsed.literal) return { ok: false, message: 'value must be a domain name, not an IP' };
      return { ok: true, value: parsed.ascii };
    }
    case 'ip_address': {
      const canonical = canonicalRange(value);
      return canonical === undefined
        ? { ok: false, message: 'value must be an IPv4 or IPv6 address or CIDR range' }
        : { ok: true, value: canonical };
    }
  }
}

/** The form an address is matched against email filters in. */
export function emailKey(parsed: ParsedAddress): string {
  return `${parsed.local.toLowerCase()}@${parsed.asciiDomain}`;
}

/** The domain and each of its parents, most specific first: a.b.example.com, ..., com. */
export function domainChain(asciiDomain: string): string[] {
  const chain = [asciiDomain];
  for (let dot = asciiDomain.indexOf('.'); dot !== -1; dot = asciiDomain.indexOf('.', dot + 1)) {
    chain.push(asciiDomain.slice(dot + 1));
  }
  return chain;
}
