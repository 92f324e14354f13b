import { canonicalIp, canonicalRange, ipInRange } from '../service/ip-ranges.js';

/**
 * Where a host adapter puts the socket's peer address on the Request it builds (a Request
 * has no socket). `mailverdict/node` sets it; the handler's default `clientIp` reads it.
 * Symbol.for, so that two copies of the package agree on it.
 */
export const REMOTE_ADDRESS: unique symbol = Symbol.for('mailverdict.remoteAddress') as never;

/** The peer address a host adapter attached to `request`, if any. */
export function remoteAddress(request: object): string | undefined {
  const value = (request as unknown as Record<symbol, unknown>)[REMOTE_ADDRESS];
  return typeof value === 'string' ? value : undefined;
}

/** Attaches the socket's peer address to a Request (for host adapters). */
export function withRemoteAddress<T extends object>(request: T, address: string | undefined): T {
  if (address !== undefined) {
    Object.defineProperty(request, REMOTE_ADDRESS, { value: address, enumerable: false });
  }
  return request;
}

/** Longest X-Forwarded-For the resolver reads: beyond that, a client is padding it. */
const MAX_FORWARDED_HOPS = 32;

/**
 * The client's IP: the peer address as the host saw it, unless that peer is one of
 * `trustedProxies`, in which case X-Forwarded-For is read from the right, each hop a trusted
 * proxy passing it on, until the first address that is not one of ours: that is the client.
 * Anything to its left is what the client wrote and is never believed.
 */
export function resolveClientIp(
  peer: string | undefined,
  forwardedFor: string | null,
  trustedProxies: readonly string[],
): string | undefined {
  if (peer === undefined) return undefined;
  const isTrusted = (ip: string): boolean => trustedProxies.some((range) => ipInRange(ip, range));
  if (trustedProxies.length === 0 || forwardedFor === null || !isTrusted(peer)) return peer;
  let client = peer;
  // Hop by hop from the right, never splitting the whole header: a client can pad it with
  // thousands of hops, of which only the last MAX_FORWARDED_HOPS are ever read.
  let end = forwardedFor.length;
  for (let read = 0; read < MAX_FORWARDED_HOPS && end >= 0; read++) {
    const comma = end === 0 ? -1 : forwardedFor.lastIndexOf(',', end - 1);
    const hop = canonicalIp(stripPort(forwardedFor.slice(comma + 1, end).trim()));
    // A garbled hop ends the chain: the last address we could trust is the answer.
    if (hop === undefined) return client;
    client = hop;
    if (!isTrusted(hop)) return hop;
    end = comma;
  }
  return client;
}

/** Canonical trusted-proxy ranges, or a TypeError naming the bad one (a configuration bug). */
export function trustedProxyRanges(ranges: readonly string[] | undefined): string[] {
  return (ranges ?? []).map((range) => {
    const canonical = canonicalRange(range);
    if (canonical === undefined) throw new TypeError(`trustedProxies: not an IP range: ${range}`);
    return canonical;
  });
}

/** `1.2.3.4:5678` and `[::1]:5678` as some proxies write them: the address alone. */
function stripPort(hop: string): string {
  if (hop.startsWith('[')) {
    const end = hop.indexOf(']');
    return end === -1 ? hop : hop.slice(1, end);
  }
  const colon = hop.indexOf(':');
  return colon !== -1 && hop.indexOf(':', colon + 1) === -1 ? hop.slice(0, colon) : hop;
}
