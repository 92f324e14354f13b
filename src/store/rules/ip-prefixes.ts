// The shape of an IP filter's value as every store indexes it: stores keep, per account, the
// prefix lengths its IP filters use, read off the canonical text alone (no address parsing).

/** An IP address or CIDR range in canonical text: `192.0.2.0/24`, `2001:db8::/32`, `192.0.2.7`. */
export type CanonicalRange = string;

/** An IP family: the width of its addresses in bits. */
export type FamilyWidth = 32 | 128;

/** The family width and prefix length of a canonical range (a bare address is a full-length one). */
export function rangeShape(range: CanonicalRange): { width: FamilyWidth; bits: number } {
  const width: FamilyWidth = range.includes(':') ? 128 : 32;
  const slash = range.indexOf('/');
  return { width, bits: slash === -1 ? width : Number(range.slice(slash + 1)) };
}
