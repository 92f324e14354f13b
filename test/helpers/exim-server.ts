import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  FETCH_MTAS,
  MAIL_WORLD,
  MTA_ROOT,
  selfSignedCertificate,
  startDaemon,
  startMta,
  type LaunchedMta,
  type TestMta,
} from './mta.js';

/**
 * Exim 4 from Debian (exim4-daemon-light), unpacked by scripts/fetch-test-mtas.sh with
 * `apt-get download` + `dpkg -x` (installing it would replace the system's MTA), and run as a
 * foreground daemon with its own config, spool, logs and ports in a temporary directory.
 */
export const EXIM_REQUIRE = 'MAILVERDICT_REQUIRE_EXIM';

const EXIM = join(MTA_ROOT, 'usr/sbin/exim4');
/** Debian builds Exim with this user compiled in: it must exist before Exim reads any config. */
const EXIM_USER = 'Debian-exim';
const HOST_NAME = 'mx.exim.test';

/** Why Exim cannot run here, or undefined when it can. */
export function eximUnavailable(): string | undefined {
  if (!existsSync(EXIM)) return `${EXIM} is missing: ${FETCH_MTAS}`;
  if (process.getuid?.() !== 0)
    return 'Exim runs its test daemon as root (it keeps root only with a root-owned config)';
  const probe = spawnSync(EXIM, ['-C', '/dev/null', '-bV'], { env: eximEnv(), encoding: 'utf8' });
  if (probe.status !== 0)
    return `${EXIM} -bV failed (${(probe.stderr || probe.stdout).trim().split('\n')[0]}): ${FETCH_MTAS}`;
  return undefined;
}

/** Starts Exim on two loopback ports the system picks. */
export function startExim(): Promise<TestMta> {
  return startMta('Exim', launch);
}

async function launch(dir: string, port: number, tlsPort: number): Promise<LaunchedMta> {
  const { uid, gid } = eximIds();
  const { key, cert } = selfSignedCertificate(dir, HOST_NAME);
  mkdirSync(join(dir, 'spool'));
  mkdirSync(join(dir, 'log'));
  // The mailboxes, for an lsearch*@ lookup: `*@domain` is the domain's catch-all.
  writeFileSync(
    join(dir, 'mailboxes'),
    `${MAIL_WORLD.mailbox}:\n*@${MAIL_WORLD.catchAllDomain}:\n`,
  );
  const config = join(dir, 'exim.conf');
  writeFileSync(config, eximConfig(dir, port, tlsPort, key, cert));
  // Exim's sessions run as Debian-exim: it must reach its spool, logs and TLS key. The config
  // stays root's, mode 644: Exim keeps root for -C only with a config nobody else can write.
  for (const path of [dir, join(dir, 'spool'), join(dir, 'log'), key, cert])
    chownSync(path, uid, gid);
  chmodSync(config, 0o644);

  const daemon = await startDaemon({
    command: EXIM,
    args: ['-C', config, '-bdf'],
    env: eximEnv(),
    ports: [port, tlsPort],
  });
  return {
    daemon,
    // A sender at a domain Exim serves, with no such mailbox: its verification fails at RCPT.
    refusedSender: `nobody@${MAIL_WORLD.localDomains[0]}`,
    logFiles: () => readLogs(join(dir, 'log')),
  };
}

/**
 * The configuration: Debian's default ACLs and messages where it has them (`relay not
 * permitted`, a router's `Unknown user`, sender verification at RCPT as its
 * CHECK_RCPT_VERIFY_SENDER does), one accept router over a mailbox list, and STARTTLS offered
 * and required on the TLS port only.
 */
function eximConfig(dir: string, port: number, tlsPort: number, key: string, cert: string): string {
  const onTlsPort = `eq{$received_port}{${tlsPort}}`;
  return `primary_hostname = ${HOST_NAME}
exim_user = ${EXIM_USER}
exim_group = ${EXIM_USER}
spool_directory = ${dir}/spool
log_file_path = ${dir}/log/%slog
pid_file_path = ${dir}/exim.pid
daemon_smtp_ports = ${port} : ${tlsPort}
local_interfaces = <; 127.0.0.1
keep_environment =
# No reverse DNS or ident lookup of the client: nothing leaves the machine.
host_lookup =
rfc1413_hosts =
domainlist local_domains = ${MAIL_WORLD.localDomains.join(' : ')}
acl_smtp_mail = acl_check_mail
acl_smtp_rcpt = acl_check_rcpt
tls_advertise_hosts = \${if ${onTlsPort}{*}{}}
tls_certificate = ${cert}
tls_privatekey = ${key}

begin acl

acl_check_mail:
  deny    condition = \${if and{{${onTlsPort}}{!def:tls_in_cipher}}}
          message = 530 5.7.0 Must issue a STARTTLS command first
  accept

acl_check_rcpt:
  deny    sender_domains = +local_domains
          !verify = sender
  require message = relay not permitted
          domains = +local_domains
  require verify = recipient
  accept

begin routers

mailbox:
  driver = accept
  domains = +local_domains
  condition = \${lookup{$local_part@$domain}lsearch*@{${dir}/mailboxes}{yes}{no}}
  transport = mailbox_file
  cannot_route_message = Unknown user

begin transports

mailbox_file:
  driver = appendfile
  file = ${dir}/mail/$local_part@$domain
`;
}

function eximIds(): { uid: number; gid: number } {
  const id = (flag: string) =>
    Number(spawnSync('id', [flag, EXIM_USER], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Exim needs libidn12, unpacked beside it (bookworm ships only libidn2 by default). */
function eximEnv(): NodeJS.ProcessEnv {
  const libRoot = join(MTA_ROOT, 'usr/lib');
  const archDirs = existsSync(libRoot)
    ? readdirSync(libRoot)
        .filter((name) => name.endsWith('-linux-gnu'))
        .map((name) => join(libRoot, name))
    : [];
  const inherited = process.env.LD_LIBRARY_PATH;
  return {
    ...process.env,
    LD_LIBRARY_PATH: [...archDirs, ...(inherited ? [inherited] : [])].join(':'),
  };
}

function readLogs(dir: string): string {
  if (!existsSync(dir)) return '';
  return readdirSync(dir)
    .map((name) => `--- ${name}\n${readFileSync(join(dir, name), 'utf8')}`)
    .join('');
}
