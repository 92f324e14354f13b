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
 * The RFC 5952 text of an IPv6 address literal (after the `IPv6:` tag) in RFC 5321's forms:
 * IPv6-full (8 groups), IPv6-comp (at most 6 groups around one `::`), and their IPv4-tailed
 * variants (6 groups, or at most 4 around `::`). Undefined when `text` is none of them.
 *
 * RFC 5952 4: lowercase hex without leading zeros, the longest run of two or more zero
 * groups (the first of equal runs) written `::`; 5: an IPv4 tail stays dotted. So
 * `0000:...:0001` and `::1` are one address, as python-email-validator normalizes it.
 */
export function canonicalIpv6(text: string): string | undefined {
  let body = text;
  let maxGroups = 8;
  let ipv4: string | undefined;
  const lastColon = body.lastIndexOf(':');
  if (lastColon >= 0 && body.indexOf('.', lastColon) > lastColon) {
    ipv4 = parseIpv4(body.slice(lastColon + 1));
    if (ipv4 === undefined) return undefined;
    // Keep the colon(s) before the IPv4 part: "::1.2.3.4" leaves "::" and "a::1.2.3.4" "a::".
    const prefix = body.slice(0, lastColon + 1);
    body = prefix.endsWith('::') ? prefix : prefix.slice(0, -1);
    maxGroups = 6;
  }
  let groups: string[];
  const doubleColon = body.indexOf('::');
  if (doubleColon < 0) {
    groups = body.split(':');
    if (groups.length !== maxGroups || !groups.every(isHexGroup)) return undefined;
  } else {
    if (body.indexOf('::', doubleColon + 1) >= 0) return undefined;
    const head = body.slice(0, doubleColon);
    const tail = body.slice(doubleColon + 2);
    const headGroups = head === '' ? [] : head.split(':');
    const tailGroups = tail === '' ? [] : tail.split(':');
    if (!headGroups.every(isHexGroup) || !tailGroups.every(isHexGroup)) return undefined;
    // "::" stands for at least two groups of zeros, so at most maxGroups - 2 are written.
    const zeros = maxGroups - headGroups.length - tailGroups.length;
    if (zeros < 2) return undefined;
    groups = [...headGroups, ...new Array<string>(zeros).fill('0'), ...tailGroups];
  }
  const values = groups.map((group) => parseInt(group, 16).toString(16));
  // The longest run of zero groups, two or more long; the first one on a tie.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < values.length;) {
    if (values[i] !== '0') {
      i++;
      continue;
    }
    let end = i;
    while (end < values.length && values[end] === '0') end++;
    if (end - i > bestLength) {
      bestStart = i;
      bestLength = end - i;
    }
    i = end;
  }
  const join = (part: string[]) => part.join(':');
  let hex: string;
  if (bestStart < 0) hex = join(values);
  else {
    const head = join(values.slice(0, bestStart));
    const tail = join(values.slice(bestStart + bestLength));
    hex = `${head}::${tail}`;
  }
  if (ipv4 === undefined) return hex;
  return hex.endsWith(':') ? `${hex}${ipv4}` : `${hex}:${ipv4}`;
}
