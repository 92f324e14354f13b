import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  MAIL_WORLD,
  selfSignedCertificate,
  startDaemon,
  startMta,
  type LaunchedMta,
  type TestMta,
} from './mta.js';

/**
 * Haraka (the npm package, a devDependency) run as its own process with a config directory of
 * its own in a temporary directory: Haraka's default config, with the files below over it.
 */
export const HARAKA_REQUIRE = 'MAILVERDICT_REQUIRE_HARAKA';

const HARAKA_DIR = harakaDirectory();

function harakaDirectory(): string | undefined {
  try {
    return dirname(createRequire(import.meta.url).resolve('Haraka/package.json'));
  } catch {
    return undefined;
  }
}

/** Why Haraka cannot run here (a node_modules from before it was a devDependency), or undefined. */
export function harakaUnavailable(): string | undefined {
  return HARAKA_DIR === undefined ? 'Haraka is not installed: run `npm install`' : undefined;
}
const HOST_NAME = 'mx.haraka.test';
const REFUSED_SENDER = 'refused@example.net';

/** Starts Haraka on two loopback ports the system picks. */
export function startHaraka(): Promise<TestMta> {
  return startMta('Haraka', launch);
}

async function launch(dir: string, port: number, tlsPort: number): Promise<LaunchedMta> {
  if (HARAKA_DIR === undefined) throw new Error(harakaUnavailable());
  const config = join(dir, 'config');
  cpSync(join(HARAKA_DIR, 'config'), config, { recursive: true });
  mkdirSync(join(dir, 'plugins'));
  const { key, cert } = selfSignedCertificate(config, HOST_NAME);
  const files: Record<string, string> = {
    // nodes=0: one process, no cluster master and worker to stop.
    'smtp.ini': `listen=127.0.0.1:${port},127.0.0.1:${tlsPort}\nnodes=0\n`,
    me: `${HOST_NAME}\n`,
    'log.ini': '[main]\nlevel=notice\n',
    plugins: 'tls\naccess\nmailverdict_mailboxes\n',
    // STARTTLS on the TLS port only. Haraka writes a fresh 2048-bit dhparams.pem with openssl
    // when there is none (seconds of CPU): RFC 7919's ffdhe2048 group is given instead.
    'tls.ini': `[main]\nkey=${key}\ncert=${cert}\ndhparam=dhparams.pem\nno_starttls_ports[]=${port}\n`,
    'dhparams.pem': FFDHE2048,
    // The access plugin, senders only: its blocklist refuses MAIL FROM in its own words.
    'access.ini': '[check]\nany=false\nconn=false\nmail=true\nrcpt=false\n',
    'mail_from.access.blacklist': `${REFUSED_SENDER}\n`,
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(config, name), text);
  writeFileSync(join(dir, 'plugins', 'mailverdict_mailboxes.js'), mailboxPlugin(tlsPort));

  const daemon = await startDaemon({
    command: process.execPath,
    args: [join(HARAKA_DIR, 'bin', 'haraka'), '-c', dir],
    ports: [port, tlsPort],
  });
  return { daemon, refusedSender: REFUSED_SENDER };
}

/**
 * Haraka ships no mailbox list of its own (sites use a plugin: LDAP, qmail-deliverable, ...);
 * this one answers as those do, with Haraka's DSN helpers: a known mailbox or a catch-all domain
 * is OK, another user at a local domain is DSN.no_such_user(), and a foreign domain gets no
 * opinion, so that Haraka's core refuses it as a relay ("I cannot deliver mail for <...>").
 * It also requires STARTTLS before MAIL FROM on the TLS port, and answers the reverse lookup of
 * the client itself: Haraka would otherwise ask the system's resolver about 127.0.0.1.
 */
function mailboxPlugin(tlsPort: number): string {
  return `'use strict'
const DSN = require('haraka-dsn')
const mailboxes = new Set(${JSON.stringify([MAIL_WORLD.mailbox])})
const localDomains = new Set(${JSON.stringify(MAIL_WORLD.localDomains)})
const catchAllDomains = new Set(${JSON.stringify([MAIL_WORLD.catchAllDomain])})
const tlsPort = ${tlsPort}

exports.hook_lookup_rdns = function (next) {
  next(OK, 'localhost')
}

exports.hook_mail = function (next, connection) {
  if (connection.local.port === tlsPort && !connection.tls.enabled)
    return next(DENY, DSN.create(530, 'Must issue a STARTTLS command first', 7, 0))
  next()
}

exports.hook_rcpt = function (next, connection, params) {
  const domain = String(params[0].host || '').toLowerCase()
  if (!localDomains.has(domain)) return next()
  const address = (params[0].user + '@' + domain).toLowerCase()
  if (catchAllDomains.has(domain) || mailboxes.has(address)) return next(OK)
  next(DENY, DSN.no_such_user())
}
`;
}

/** RFC 7919's ffdhe2048 group, as `openssl genpkey -genparam -algorithm DH -pkeyopt group:ffdhe2048` prints it. */
const FFDHE2048 = `-----BEGIN DH PARAMETERS-----
MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz
+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a
87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7
YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi
7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD
ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==
-----END DH PARAMETERS-----
`;
