import ipaddr from 'ipaddr.js';

/**
 * Whether an IP address is one the prober may connect to. MX records and domain literals are
 * written by strangers and can point anywhere, our own network included (SSRF); only global
 * unicast addresses are allowed, unless the caller opts into private networks (tests, an
 * intranet deployment). Refused: loopback, RFC 1918 private, link-local, CGNAT (100.64/10),
 * unspecified, broadcast, multicast, documentation, benchmarking, reserved, ULA (fc00::/7),
 * IPv4-mapped and NAT64 forms of any of those, and so on: ipaddr.js's range names.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    const range = v6.range();
    // Forms that carry an IPv4 address are judged by that address: NAT64 (RFC 6052, what
    // DNS64 resolvers hand to IPv6-only hosts) in the last 32 bits, 6to4 in bits 16-47.
    if (range === 'ipv4Mapped') parsed = v6.toIPv4Address();
    else if (range === 'rfc6052') parsed = ipv4Of(v6.parts[6], v6.parts[7]);
    else if (range === '6to4') parsed = ipv4Of(v6.parts[1], v6.parts[2]);
  }
  return parsed.range() === 'unicast';
}

function ipv4Of(high = 0, low = 0): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}
