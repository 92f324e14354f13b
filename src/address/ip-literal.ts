/**
 * Address literals of RFC 5321 4.1.3: `[192.0.2.1]` and `[IPv6:2001:db8::1]`. A general
 * address literal (`[tag:text]`) is refused: no mail system routes one.
 */

/**
 * The address inside a bracketed domain literal, without its `IPv6:` tag
 * (`[IPv6:2001:db8::1]` -> `2001:db8::1`), or undefined when `domain` is not bracketed.
 * It is not validated here: the parser has done that for a parsed address.
 */
export function literalAddress(domain: string): string | undefined {
  if (!domain.startsWith('[') || !domain.endsWith(']')) return undefined;
  const inner = domain.slice(1, -1);
  return inner.slice(0, 5).toLowerCase() === 'ipv6:' ? inner.slice(5) : inner;
}

/** The canonical text of a valid IPv4 literal body, or undefined. */
export function parseIpv4(text: string): string | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const octets: number[] = [];
  for (const part of parts) {
    // RFC 5321 Snum: 1*3DIGIT, value 0-255.
    if (part.length < 1 || part.length > 3) return undefined;
    let value = 0;
    for (let i = 0; i < part.length; i++) {
      const code = part.charCodeAt(i);
      if (code < 0x30 || code > 0x39) return undefined;
      value = value * 10 + (code - 0x30);
    }
    if (value > 255) return undefined;
    octets.push(value);
  }
  return octets.join('.');
}

function isHexGroup(group: string): boolean {
  if (group.length < 1 || group.length > 4) return false;
  for (let i = 0; i < group.length; i++) {
    const code = group.charCodeAt(i) | 0x20;
    if (!((code >= 0x30 && code <= 0x39) || (code >= 0x61 && code <= 0x66))) return false;
  }
  return true;
}

/**
 * Whether `text` (after the `IPv6:` tag) is an IPv6 address literal in RFC 5321's forms:
 * IPv6-full (8 groups), IPv6-comp (at most 6 groups around one `::`), and their IPv4-tailed
 * variants (6 groups, or at most 4 around `::`).
 */
export function isIpv6Literal(text: string): boolean {
  let body = text;
  let maxGroups = 8;
  const lastColon = body.lastIndexOf(':');
  if (lastColon >= 0 && body.indexOf('.', lastColon) > lastColon) {
    if (parseIpv4(body.slice(lastColon + 1)) === undefined) return false;
    // Keep the colon(s) before the IPv4 part: "::1.2.3.4" leaves "::" and "a::1.2.3.4" "a::".
    const prefix = body.slice(0, lastColon + 1);
    body = prefix.endsWith('::') ? prefix : prefix.slice(0, -1);
    maxGroups = 6;
  }
  const doubleColon = body.indexOf('::');
  if (doubleColon < 0) {
    const groups = body.split(':');
    return groups.length === maxGroups && groups.every(isHexGroup);
  }
  if (body.indexOf('::', doubleColon + 1) >= 0) return false;
  const head = body.slice(0, doubleColon);
  const tail = body.slice(doubleColon + 2);
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === '' ? [] : tail.split(':');
  if (!headGroups.every(isHexGroup) || !tailGroups.every(isHexGroup)) return false;
  // "::" stands for at least two groups of zeros, so at most maxGroups - 2 are written.
  return headGroups.length + tailGroups.length <= maxGroups - 2;
}
