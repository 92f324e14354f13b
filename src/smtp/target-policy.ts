import ipaddr from 'ipaddr.js';

/** RFC 6052's well-known NAT64 prefix: the IPv4 address is the last 32 bits. */
const NAT64_WELL_KNOWN = ipaddr.IPv6.parse('64:ff9b::');

/**
 * Whether an IP address is one the prober may connect to. MX records and domain literals are
 * written by strangers and can point anywhere, our own network included (SSRF); only global
 * unicast addresses are allowed, unless the caller opts into private networks (tests, an
 * intranet deployment). Refused: loopback, RFC 1918 private, link-local, CGNAT (100.64/10),
 * unspecified, broadcast, multicast, documentation, benchmarking, reserved, ULA (fc00::/7),
 * IPv4-mapped, NAT64 and 6to4 forms of any of those, and every IPv6 address outside 2000::/3.
 */
export function isPublicAddress(address: string): boolean {
  // One spelling per address: a dotted quad or IPv6 text. `134744072`, `0x8.8.8.8` and
  // `8.8.8.010` are 8.8.8.8 to ipaddr.js, but node:net and SOCKS take them for host names,
  // to be resolved again (by the system, or by the proxy) after this check.
  const strict = address.includes(':')
    ? ipaddr.IPv6.isValid(address)
    : ipaddr.IPv4.isValidFourPartDecimal(address);
  if (!strict) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  const embedded = embeddedIpv4(v6);
  if (embedded !== undefined) return embedded.range() === 'unicast';
  // IANA allocates global unicast from 2000::/3 only. ipaddr.js calls the rest 'unicast' too,
  // the deprecated IPv4-compatible ::/96 (`::7f00:1` is `::127.0.0.1`), the local-use NAT64
  // prefix 64:ff9b:1::/48 (RFC 8215; where its IPv4 sits is up to the operator) and the
  // unallocated space among them: none of them is the public internet.
  const first = v6.parts[0] ?? 0;
  return first >= 0x2000 && first <= 0x3fff && v6.range() === 'unicast';
}

/**
 * The IPv4 address an IPv6 form carries, for the forms that reach it: IPv4-mapped (a
 * dual-stack socket connects to the IPv4 address), NAT64 with the well-known prefix (what
 * DNS64 resolvers hand to IPv6-only hosts) in the last 32 bits, 6to4 in bits 16-47.
 */
function embeddedIpv4(v6: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const range = v6.range();
  if (range === 'ipv4Mapped') return v6.toIPv4Address();
  if (range === 'rfc6052' && v6.match(NAT64_WELL_KNOWN, 96)) {
    return ipv4Of(v6.parts[6], v6.parts[7]);
  }
  if (range === '6to4') return ipv4Of(v6.parts[1], v6.parts[2]);
  return undefined;
}

function ipv4Of(high = 0, low = 0): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}
