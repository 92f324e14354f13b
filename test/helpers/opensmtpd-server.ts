import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  FETCH_MTAS,
  MAIL_WORLD,
  MTA_ROOT,
  type MtaQuirks,
  selfSignedCertificate,
  startDaemon,
  startMta,
  type LaunchedMta,
  type TestMta,
} from './mta.js';

/**
 * OpenSMTPD 6.8 from Debian (opensmtpd), unpacked by scripts/fetch-test-mtas.sh. Its queue
 * (/var/spool/smtpd), chroot (/var/lib/opensmtpd/empty) and control socket (/run/smtpd.sock)
 * are compiled in: each test server runs in a mount namespace of its own (`unshare --mount`)
 * where its temporary directory is bound over those three, so that it shares nothing with the
 * machine or with another test server.
 */
export const OPENSMTPD_REQUIRE = 'MAILVERDICT_REQUIRE_OPENSMTPD';

const SMTPD = join(MTA_ROOT, 'usr/sbin/smtpd');
/** Debian's build runs its privilege-separated processes as these two users (its postinst makes them). */
const SMTPD_USERS = ['opensmtpd', 'opensmtpq'];
const HOST_NAME = 'mx.opensmtpd.test';
const REFUSED_SENDER = 'refused@example.net';

/** `6.8.0p2`, as `smtpd -h` prints it (and exits 1), or undefined when smtpd does not run. */
function openSmtpdVersion(): string | undefined {
  if (!existsSync(SMTPD)) return undefined;
  const help = spawnSync(SMTPD, ['-h'], { encoding: 'utf8' });
  return /^version: OpenSMTPD (\S+)/m.exec(`${help.stdout}${help.stderr}`)?.[1];
}

/**
 * Debian 12's 6.8 signs TLS handshakes through its privilege-separated key process, which
 * OpenSSL 3 no longer calls ("missing private key", then "EVP lib": OpenSMTPD issues #1171 and
 * #1239): its TLS listener offers STARTTLS and fails every handshake. Later versions are held
 * to the whole contract, STARTTLS required on the TLS port.
 */
const TLS_HANDSHAKE_FAILS = openSmtpdVersion()?.startsWith('6.') === true;

/** What OpenSMTPD cannot do as the other servers do (test/integration/mta-contract.ts). */
export function openSmtpdQuirks(): MtaQuirks {
  return {
    // lka_session.c: a recipient no rule matches (a relay) and a user its user base lacks both
    // end as LKA_PERMFAIL with no message of their own: "550 Invalid recipient: <address>".
    relayRefusedAsUnknownUser: 'OpenSMTPD answers both "550 Invalid recipient"',
    ...(TLS_HANDSHAKE_FAILS && {
      tlsHandshakeFails: {
        why: 'OpenSMTPD 6.8 built against OpenSSL 3, OpenSMTPD issue #1171',
        logged: /io-error: error:[0-9A-F]+:SSL routines::EVP lib/,
      },
    }),
  };
}

/** Why OpenSMTPD cannot run here, or undefined when it can. */
export function openSmtpdUnavailable(): string | undefined {
  if (!existsSync(SMTPD)) return `${SMTPD} is missing: ${FETCH_MTAS}`;
  if (openSmtpdVersion() === undefined) return `${SMTPD} -h prints no version: ${FETCH_MTAS}`;
  if (process.getuid?.() !== 0) return 'OpenSMTPD runs as root only';
  const missing = SMTPD_USERS.filter((user) => spawnSync('id', [user]).status !== 0);
  if (missing.length > 0) return `the ${missing.join(' and ')} users are missing: ${FETCH_MTAS}`;
  const namespace = spawnSync('unshare', ['--mount', '--propagation', 'private', 'true'], {
    encoding: 'utf8',
  });
  if (namespace.status !== 0)
    return `no mount namespace here (unshare --mount: ${namespace.stderr.trim()})`;
  return undefined;
}

/** Starts OpenSMTPD on two loopback ports the system picks. */
export function startOpenSmtpd(): Promise<TestMta> {
  return startMta('OpenSMTPD', launch);
}

async function launch(dir: string, port: number, tlsPort: number): Promise<LaunchedMta> {
  // Its unprivileged processes read the tables and reach the spool through this directory.
  chmodSync(dir, 0o755);
  const { key, cert } = selfSignedCertificate(dir, HOST_NAME);
  chmodSync(key, 0o600);
  const spool = join(dir, 'var-spool');
  const lib = join(dir, 'var-lib');
  const run = join(dir, 'run');
  // smtpd checks these modes at start: root's 711 queue root and a 755 empty chroot.
  mkdirSync(join(spool, 'smtpd'), { recursive: true, mode: 0o711 });
  mkdirSync(join(lib, 'opensmtpd', 'empty'), { recursive: true, mode: 0o755 });
  mkdirSync(run, { mode: 0o755 });
  mkdirSync(join(dir, 'mail'), { mode: 0o755 });
  const home = join(dir, 'mail');
  const [localPart] = MAIL_WORLD.mailbox.split('@');
  const tables: Record<string, string> = {
    // A user base of its own instead of the system's passwd: ann is a user, bob is not.
    mailboxes: `${localPart} 65534:65534:${home}\n`,
    // Every local part of the catch-all domain maps to one virtual user.
    'catch-all': `@${MAIL_WORLD.catchAllDomain} vmail\n`,
    'virtual-users': `vmail 65534:65534:${home}\n`,
    'refused-senders': `${REFUSED_SENDER}\n`,
  };
  for (const [name, text] of Object.entries(tables)) writeFileSync(join(dir, name), text);
  const [mailboxDomain] = MAIL_WORLD.localDomains;
  const config = join(dir, 'smtpd.conf');
  writeFileSync(
    config,
    `pki ${HOST_NAME} cert "${cert}"
pki ${HOST_NAME} key "${key}"
table mailboxes file:${dir}/mailboxes
table catchall file:${dir}/catch-all
table virtualusers file:${dir}/virtual-users
table refused file:${dir}/refused-senders
# OpenSMTPD refuses a sender with a built-in filter; the words are the configuration's.
filter refuse_sender phase mail-from match mail-from <refused> reject "550 5.7.1 Sender address rejected: Access denied"
listen on 127.0.0.1 port ${port} hostname ${HOST_NAME} filter refuse_sender
listen on 127.0.0.1 port ${tlsPort} ${TLS_HANDSHAKE_FAILS ? 'tls' : 'tls-require'} pki ${HOST_NAME} hostname ${HOST_NAME} filter refuse_sender
action "mailbox" maildir "${home}/%{user.username}" userbase <mailboxes>
action "catchall" maildir "${home}/catch-all" virtual <catchall> userbase <virtualusers>
match from any for domain "${mailboxDomain}" action "mailbox"
match from any for domain "${MAIL_WORLD.catchAllDomain}" action "catchall"
`,
  );
  const check = spawnSync(SMTPD, ['-n', '-f', config], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`smtpd.conf refused: ${check.stderr.trim()}`);

  const mounts = [
    `mount --bind ${spool} /var/spool`,
    `mount --bind ${lib} /var/lib`,
    `mount --bind ${run} /run`,
  ].join(' && ');
  const daemon = await startDaemon({
    command: 'unshare',
    args: [
      '--mount',
      '--propagation',
      'private',
      'sh',
      '-c',
      `${mounts} && exec ${SMTPD} -d -f ${config}`,
    ],
    ports: [port, tlsPort],
  });
  return { daemon, refusedSender: REFUSED_SENDER };
}
