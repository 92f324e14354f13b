/** One SOCKS5 proxy, as parsed from `socks5://[user:pass@]host:port`. */
export interface ProxySpec {
  readonly host: string;
  readonly port: number;
  /** RFC 1929 username/password, percent-decoded; absent for "no authentication". */
  readonly auth?: { readonly user: string; readonly password: string };
  /** The URL with its password hidden, for messages and logs. */
  readonly label: string;
}

/** RFC 1929 2: ULEN and PLEN are one octet each, and at least 1. */
const MAX_CREDENTIAL_BYTES = 255;

/**
 * Parses one proxy URL, or throws a TypeError naming it (password hidden). Only `socks5:`:
 * `socks5h:` would let the proxy resolve names, and the prober must connect to the address it
 * checked itself (no SSRF through the proxy); SOCKS4 cannot carry IPv6 or credentials.
 *
 * @example
 * parseProxyUrl('socks5://probe:s%40cret@10.0.0.5:1080');
 * // { host: '10.0.0.5', port: 1080, auth: { user: 'probe', password: 's@cret' }, label: ... }
 */
export function parseProxyUrl(text: string): ProxySpec {
  const label = hidePassword(text);
  const bad = (why: string) => new TypeError(`smtp proxy '${label}': ${why}`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw bad('not a URL; expected socks5://[user:pass@]host:port');
  }
  if (url.protocol !== 'socks5:') {
    throw bad(`scheme '${url.protocol}' is not supported; only socks5:// (we resolve names)`);
  }
  // Non-special schemes keep IPv6 brackets in hostname; net.connect wants them gone.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw bad('no host');
  if (url.port === '') throw bad('no port (SOCKS has no default port to assume)');
  const port = Number(url.port);
  if (!(port >= 1 && port <= 65_535)) throw bad('port must be 1-65535');
  if ((url.pathname !== '' && url.pathname !== '/') || url.search !== '' || url.hash !== '') {
    throw bad('a proxy URL has no path, query or fragment');
  }
  if (url.username === '' && url.password === '') return { host, port, label };
  let user: string;
  let password: string;
  try {
    user = decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
  } catch {
    throw bad('credentials are not valid percent-encoding');
  }
  const encoder = new TextEncoder();
  for (const [name, value] of [
    ['user', user],
    ['password', password],
  ] as const) {
    const bytes = encoder.encode(value).length;
    if (bytes < 1 || bytes > MAX_CREDENTIAL_BYTES) {
      throw bad(`${name} must be 1-${MAX_CREDENTIAL_BYTES} bytes (RFC 1929)`);
    }
  }
  return { host, port, auth: { user, password }, label };
}

/** Parses every proxy URL; the first bad one throws. */
export function parseProxyUrls(texts: readonly string[]): ProxySpec[] {
  if (!Array.isArray(texts)) throw new TypeError('smtp proxies must be an array of URLs');
  return texts.map((text) => {
    if (typeof text !== 'string') throw new TypeError('smtp proxies must be URL strings');
    return parseProxyUrl(text);
  });
}

/** `socks5://user:secret@host:1080` -> `socks5://user:***@host:1080`; a password never leaks. */
function hidePassword(text: string): string {
  const at = text.lastIndexOf('@');
  if (at < 0) return text;
  const start = text.indexOf('//') + 2;
  const colon = text.indexOf(':', start);
  return colon >= start && colon < at ? `${text.slice(0, colon)}:***${text.slice(at)}` : text;
}
