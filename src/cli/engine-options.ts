import { isIP } from 'node:net';
import type { EngineOptions } from '../compose/engine.js';
import { METHOD_NAMES, type MethodName } from '../engine/methods.js';
import { optional } from '../optional.js';
import { parseProxyUrl } from '../smtp/proxy-url.js';
import { isSmtpIdentity } from '../smtp/commands.js';
import { UsageError } from './exit-codes.js';

/** The flags every verifying command shares, as commander hands them over. */
export interface EngineFlags {
  readonly method: string;
  readonly offline?: boolean;
  readonly dnsServer?: string[];
  readonly dnsTimeout?: string;
  readonly dnsCanary?: boolean;
  readonly helo?: string;
  readonly mailFrom?: string;
  readonly smtpPort?: string;
  readonly smtpTimeout?: string;
  /** SOCKS5 proxies to probe through (`socks5://[user:pass@]host:port`). */
  readonly smtpProxy?: string[];
  readonly concurrency?: string;
  /** Tests and intranets: MX hosts (and serve's callbacks) on loopback and private addresses. */
  readonly allowPrivateNetworks?: boolean;
}

export function methodOf(flags: EngineFlags): MethodName {
  if (!(METHOD_NAMES as readonly string[]).includes(flags.method)) {
    throw new UsageError(
      `unknown method ${JSON.stringify(flags.method)}: expected one of ${METHOD_NAMES.join(', ')}`,
    );
  }
  if (flags.method === 'smtp' && flags.offline === true) {
    throw new UsageError('--offline cannot probe mailboxes: use --method quick or standard');
  }
  return flags.method as MethodName;
}

/** Engine options from the flags; every number checked, with the flag named when it is wrong. */
export function engineOptionsOf(flags: EngineFlags): EngineOptions {
  const port = integer(flags.smtpPort, '--smtp-port', 1, 65_535);
  const dnsTimeout = integer(flags.dnsTimeout, '--dns-timeout', 1, 600_000);
  const smtpTimeout = integer(flags.smtpTimeout, '--smtp-timeout', 1, 600_000);
  const servers = flags.dnsServer?.map(checkedDnsServer);
  const smtpOptions = {
    ...optional('heloName', flags.helo === undefined ? undefined : plain(flags.helo, '--helo')),
    ...optional(
      'mailFrom',
      flags.mailFrom === undefined ? undefined : plain(flags.mailFrom, '--mail-from'),
    ),
    ...optional('port', port),
    ...optional('commandTimeoutMs', smtpTimeout),
    ...optional('proxies', flags.smtpProxy?.map(checkedProxy)),
    ...(flags.allowPrivateNetworks === true ? { allowPrivateNetworks: true } : {}),
  };
  const dnsOptions = {
    ...(servers === undefined ? {} : { servers }),
    ...optional('timeoutMs', dnsTimeout),
  };
  return {
    offline: flags.offline === true,
    dnsOptions,
    ...(flags.dnsCanary === false ? { dnsCanary: false as const } : {}),
    smtpOptions,
  };
}

/**
 * Batch options for `--allow-private-networks`: webhook callbacks to loopback and private
 * addresses, over plain http too (an intranet receiver rarely has a certificate).
 */
export function callbackOptionsOf(flags: Pick<EngineFlags, 'allowPrivateNetworks'>) {
  return flags.allowPrivateNetworks === true
    ? { allowPrivateNetworks: true, allowHttpCallbacks: true }
    : {};
}

/**
 * A name server as the resolver takes it: an IP, `ip:port` or `[ipv6]:port`. Checked here, or
 * the resolver's own refusal would end the run as a failure (exit 4) rather than a usage error.
 */
function checkedDnsServer(server: string): string {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(server);
  const colons = server.split(':').length - 1;
  const [ip, port] =
    bracketed !== null
      ? [bracketed[1] ?? '', bracketed[2]]
      : colons === 1
        ? (server.split(':') as [string, string])
        : [server, undefined];
  const family = isIP(ip);
  const portNumber = port === undefined ? 53 : wholeNumber(port);
  const portOk = portNumber >= 1 && portNumber <= 65_535;
  if (family === 0 || (bracketed === null && colons === 1 && family !== 4) || !portOk) {
    throw new UsageError(
      `--dns-server must be an IP address, ip:port or [ipv6]:port, got ${JSON.stringify(server)}`,
    );
  }
  return server;
}

/**
 * A name for the SMTP greeting or the envelope sender, by the prober's rule (isSmtpIdentity:
 * no spaces, control characters or `>`, since a CR LF would smuggle a command). createEngine
 * refuses one too, as a TypeError (exit 4); refused here, it is a usage error naming the flag.
 */
function plain(value: string, flag: string): string {
  if (!isSmtpIdentity(value)) {
    throw new UsageError(
      `${flag} must be a plain name, without spaces, control characters or '>', got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** A proxy URL the prober will take; a bad one is a usage error naming it (password hidden). */
function checkedProxy(url: string): string {
  try {
    parseProxyUrl(url);
    return url;
  } catch (error) {
    throw new UsageError(`--smtp-proxy: ${(error as Error).message}`);
  }
}

export function concurrencyOf(flags: EngineFlags): number | undefined {
  return integer(flags.concurrency, '--concurrency', 1, 10_000);
}

const DIGITS = /^\d+$/;

/**
 * A whole number as a person types it (decimal digits, nothing else), or NaN: for the amounts
 * whose bounds the service checks and names itself.
 */
export function wholeNumber(value: string): number {
  return DIGITS.test(value) ? Number(value) : NaN;
}

/** A whole-number flag within [min, max], or undefined when not given; the flag named when wrong. */
export function integer(
  value: string | undefined,
  flag: string,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return undefined;
  // Decimal digits only: Number() would also take '', ' 5', '1e3' and '0x10'.
  const number = wholeNumber(value);
  if (!Number.isInteger(number) || number < min || number > max) {
    throw new UsageError(
      `${flag} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`,
    );
  }
  return number;
}
