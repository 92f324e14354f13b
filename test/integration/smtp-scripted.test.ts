import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import type { Verdict } from '../../src/engine/verdict.js';
import { createNodeSmtp, type NodeSmtpOptions } from '../../src/adapters/node/smtp.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { LOOPBACK_SMTP_OPTIONS } from '../helpers/smtp-server.js';

/**
 * Scripted real-world SMTP servers on 127.0.0.1, each a table row: what the server says at
 * each step, and the verdict the README's "How a reply is read" requires for it. The scripts replay how Gmail,
 * Exchange Online, Yahoo, the mail filters and the MTAs answer a probe (texts from the
 * reply corpus), and the faults they have: tarpits, drops, 421s, limits.
 */

/** What one connection has seen, for scripts that answer by state. */
interface Conversation {
  /** 0 for the first connection to the server, 1 for the second... */
  readonly connection: number;
  /** RCPT commands since the last MAIL FROM. */
  rcpts: number;
}

/**
 * The reply to one command (CRLFs included), `undefined` to stay silent, `'drop'` to close,
 * `'reset'` to reset, or a reply after which the server closes the connection.
 */
type Answer =
  string | undefined | 'drop' | 'reset' | { readonly say: string; readonly close: true };

interface Script {
  /** The greeting; `undefined` never greets (a tarpit). */
  readonly banner?: string | undefined;
  /** Wait this long before the greeting (postscreen's greet pause, slow banners). */
  readonly bannerDelayMs?: number;
  /** Close the connection as soon as it is made. */
  readonly dropAtConnect?: boolean;
  /** EHLO keywords after the greeting line. */
  readonly extensions?: readonly string[];
  /** Answers a command; `null` falls back to the polite default (250, 221 to QUIT). */
  readonly on?: (command: string, conversation: Conversation) => Answer | null;
}

interface ScriptedServer {
  readonly port: number;
  readonly commands: string[];
  readonly connections: () => number;
  readonly open: () => number;
  close(): Promise<void>;
}

const running: ScriptedServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.close()));
});

/** `script`, or one script per connection (the last repeats): MX hosts on one port. */
async function serve(
  scripts: Script | readonly Script[],
  host = '127.0.0.1',
  port = 0,
): Promise<ScriptedServer> {
  const list = Array.isArray(scripts) ? scripts : [scripts as Script];
  const sockets = new Set<Socket>();
  const commands: string[] = [];
  let connections = 0;
  const server: Server = createServer((socket) => {
    const conversation: Conversation = { connection: connections++, rcpts: 0 };
    const script = list[Math.min(conversation.connection, list.length - 1)] as Script;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    if (script.dropAtConnect === true) return void socket.end();
    const banner = 'banner' in script ? script.banner : '220 mx.test ESMTP\r\n';
    if (banner !== undefined) {
      if (script.bannerDelayMs === undefined) socket.write(banner);
      else setTimeout(() => !socket.destroyed && socket.write(banner), script.bannerDelayMs);
    }
    let buffer = '';
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline).replace(/\r$/, '');
        buffer = buffer.slice(newline + 1);
        commands.push(line);
        if (socket.destroyed) return;
        reply(line, socket, script, conversation);
      }
    });
  });

  function reply(line: string, socket: Socket, script: Script, conversation: Conversation) {
    const verb = line.slice(0, 4).toUpperCase();
    if (verb === 'MAIL') conversation.rcpts = 0;
    if (verb === 'RCPT') conversation.rcpts++;
    const scripted = script.on === undefined ? null : script.on(line, conversation);
    if (scripted === 'drop') return void socket.end();
    if (scripted === 'reset') return void socket.resetAndDestroy();
    if (typeof scripted === 'object' && scripted !== null) return void socket.end(scripted.say);
    if (scripted !== null) {
      if (scripted !== undefined) socket.write(scripted);
      return;
    }
    if (verb === 'EHLO') {
      const lines = ['mx.test', ...(script.extensions ?? ['PIPELINING', 'ENHANCEDSTATUSCODES'])];
      socket.write(
        lines.map((text, i) => `250${i < lines.length - 1 ? '-' : ' '}${text}\r\n`).join(''),
      );
    } else if (verb === 'QUIT') socket.end('221 2.0.0 Bye\r\n');
    else socket.write('250 2.0.0 Ok\r\n');
  }

  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const scripted: ScriptedServer = {
    port: (server.address() as AddressInfo).port,
    commands,
    connections: () => connections,
    open: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  running.push(scripted);
  return scripted;
}

/** The recipient of a RCPT command. */
const recipient = (command: string) =>
  command.slice(command.indexOf('<') + 1, command.lastIndexOf('>'));

/** The catch-all probe's address: 20 random letters and digits. */
const isRandom = (command: string) => /^[a-z0-9]{20}@/.test(recipient(command));

const SMTP_OPTIONS = LOOPBACK_SMTP_OPTIONS;

/** Verifies `addresses` (smtp method) against MX hosts mapped to loopback addresses. */
async function verify(
  server: ScriptedServer,
  addresses: readonly string[],
  options: {
    readonly hosts?: Readonly<Record<string, readonly string[]>>;
    readonly smtp?: Partial<NodeSmtpOptions>;
  } = {},
): Promise<Verdict[]> {
  const hosts = options.hosts ?? { 'mx.example.org': ['127.0.0.1'] };
  const domains = [...new Set(addresses.map((a) => a.slice(a.lastIndexOf('@') + 1)))];
  const engine = createEngine({
    dns: createMemoryDns(Object.fromEntries(domains.map((d) => [d, Object.keys(hosts)])), hosts),
    smtpOptions: { ...SMTP_OPTIONS, port: server.port, ...options.smtp },
    greylistRetryMs: 600_000,
  });
  const verdicts: Verdict[] = [];
  for await (const { index, verdict } of engine.verifyMany(addresses, { method: 'smtp' })) {
    verdicts[index] = verdict;
  }
  await expectAllClosed(server);
  return verdicts;
}

/** The probe resolves once its sockets closed; give the server's side a moment to see it. */
async function expectAllClosed(server: ScriptedServer): Promise<void> {
  for (let i = 0; i < 50 && server.open() > 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(server.open(), 'no socket is left open').toBe(0);
}

const smtpCode = (verdict: Verdict | undefined) =>
  verdict?.checks.find((finding) => finding.check === 'smtp')?.code;

interface Row {
  readonly name: string;
  readonly script: Script;
  readonly address?: string;
  readonly expected: readonly [state: string, reason: string];
  /** The smtp finding's code, when the row pins it. */
  readonly code?: string;
  readonly catchAll?: boolean | null;
}

/** 550 5.1.1 for every address but `ann@` and `ann2@`..., which exist. */
const annOnly =
  (
    unknown = (rcpt: string) => `550 5.1.1 <${rcpt}>: Recipient address rejected: User unknown\r\n`,
  ) =>
  (command: string): Answer | null =>
    command.startsWith('RCPT')
      ? /^ann\d*@/.test(recipient(command))
        ? '250 2.1.5 Ok\r\n'
        : unknown(recipient(command))
      : null;

const ROWS: readonly Row[] = [
  {
    name: 'Gmail: an existing mailbox, the random one refused with a multi-line 550 5.1.1',
    script: {
      banner: '220 mx.google.com ESMTP a1si123 - gsmtp\r\n',
      extensions: ['SIZE 157286400', '8BITMIME', 'STARTTLS', 'ENHANCEDSTATUSCODES', 'PIPELINING'],
      on: annOnly(
        () =>
          '550-5.1.1 The email account that you tried to reach does not exist. Please try\r\n' +
          "550-5.1.1 double-checking the recipient's email address for typos or\r\n" +
          '550-5.1.1 unnecessary spaces. Learn more at\r\n' +
          '550 5.1.1  https://support.google.com/mail/?p=NoSuchUser s19si71853ejd.408 - gsmtp\r\n',
      ),
    },
    expected: ['deliverable', 'accepted_email'],
    catchAll: false,
  },
  {
    name: 'Exchange Online: 550 5.1.10 RecipientNotFound is a missing mailbox',
    script: {
      banner:
        '220 AM4PEPF00027A5F.mail.protection.outlook.com Microsoft ESMTP MAIL Service ready\r\n',
      on: annOnly(
        (rcpt) =>
          `550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient ${rcpt} not found by SMTP address lookup\r\n`,
      ),
    },
    address: 'bob@example.org',
    expected: ['undeliverable', 'rejected_email'],
    code: 'mailbox_not_found',
  },
  {
    // Microsoft documents Directory-Based Edge Blocking's AS(201806281) as "the recipient's
    // address doesn't exist": the marker decides, not "Access denied".
    name: 'Exchange Online: 550 5.4.1 ... Access denied. AS(201806281) is a missing mailbox',
    script: {
      on: annOnly(
        () =>
          '550 5.4.1 Recipient address rejected: Access denied. AS(201806281) [PR2FRA01FT009.eop-fra01.prod.protection.outlook.com]\r\n',
      ),
    },
    address: 'bob@example.org',
    expected: ['undeliverable', 'rejected_email'],
    code: 'mailbox_not_found',
  },
  {
    name: 'Exchange Online: 550 5.4.1 Recipient address rejected: Access denied without the DBEB marker is unknown',
    script: {
      on: annOnly(
        (rcpt) =>
          `550 5.4.1 [${rcpt}]: Recipient address rejected: Access denied [CY1GCC01FT007.eop-gcc01.prod.protection.outlook.com]\r\n`,
      ),
    },
    address: 'bob@example.org',
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: 'Outlook.com: 550 5.5.0 mailbox unavailable is unknown',
    script: {
      on: annOnly(
        () => '550 5.5.0 Requested action not taken: mailbox unavailable (S2017062302)\r\n',
      ),
    },
    address: 'bob@example.org',
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: "Yahoo: 554 delivery error: dd This user doesn't have a yahoo.com account",
    script: {
      on: annOnly(
        (rcpt) =>
          `554 delivery error: dd This user doesn't have a yahoo.com account (${rcpt}) [0] - mta1064.mail.ird.yahoo.com\r\n`,
      ),
    },
    address: 'bob@example.org',
    expected: ['undeliverable', 'rejected_email'],
  },
  {
    name: 'Yahoo: 421 4.7.0 [TSS04] at MAIL FROM is about our IP',
    script: {
      on: (c) =>
        c.startsWith('MAIL')
          ? '421 4.7.0 [TSS04] Messages from 192.0.2.25 temporarily deferred due to unexpected volume or user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes\r\n'
          : null,
    },
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: 'Mimecast: 550 Invalid Recipient',
    script: {
      on: annOnly(
        () => '550 Invalid Recipient - https://community.mimecast.com/docs/DOC-1369#550\r\n',
      ),
    },
    address: 'bob@example.org',
    expected: ['undeliverable', 'rejected_email'],
  },
  {
    name: 'Mimecast: 550 Administrative prohibition envelope blocked is policy',
    script: { on: annOnly(() => '550 Administrative prohibition envelope blocked\r\n') },
    address: 'bob@example.org',
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: 'Proofpoint: a 554 5.7.0 banner refuses our IP',
    script: {
      banner:
        '554 5.7.0 Blocked - see https://support.proofpoint.com/dnsbl-lookup.cgi?ip=192.0.2.1\r\n',
    },
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: 'Proofpoint: 550 5.1.1 User Unknown',
    script: { on: annOnly(() => '550 5.1.1 User Unknown\r\n') },
    address: 'bob@example.org',
    expected: ['undeliverable', 'rejected_email'],
  },
  {
    name: 'Barracuda: cuda_nsu 5.1.1 User unknown',
    script: {
      on: annOnly((r) => `550 cuda_nsu 5.1.1 <${r}> Recipient address rejected: User unknown\r\n`),
    },
    address: 'bob@example.org',
    expected: ['undeliverable', 'rejected_email'],
  },
  {
    name: 'Barracuda: a reputation block at RCPT',
    script: {
      on: (c) =>
        c.startsWith('RCPT')
          ? '554-Service unavailable; Client host [192.0.2.1] blocked using\r\n554-Barracuda Reputation;\r\n554 http://www.barracudanetworks.com/reputation/?r=1&ip=192.0.2.1\r\n'
          : null,
    },
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: 'Postfix + postgrey: 450 4.2.0 Greylisted',
    script: {
      banner: '220 mail.example.org ESMTP Postfix (Debian/GNU)\r\n',
      on: (c) =>
        c.startsWith('RCPT')
          ? `450 4.2.0 <${recipient(c)}>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/example.org.html\r\n`
          : null,
    },
    expected: ['risky', 'unavailable_smtp'],
    code: 'greylisted',
  },
  {
    name: 'Exim: 550 Unrouteable address',
    script: {
      banner: '220 mx.example.org ESMTP Exim 4.96\r\n',
      on: annOnly(() => '550 Unrouteable address\r\n'),
    },
    address: 'bob@example.org',
    expected: ['undeliverable', 'rejected_email'],
  },
  {
    name: 'Exim: sender verify failed at RCPT',
    script: {
      on: (c) =>
        c.startsWith('RCPT')
          ? '550-Verification failed for <verify@example.net>\r\n550-Unrouteable address\r\n550 Sender verify failed\r\n'
          : null,
    },
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: 'qmail: 553 not in my list of allowed rcpthosts is relay',
    script: {
      extensions: ['PIPELINING', '8BITMIME'],
      on: (c) =>
        c.startsWith('RCPT')
          ? "553 sorry, that domain isn't in my list of allowed rcpthosts (#5.7.1)\r\n"
          : null,
    },
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: 'qmail (chkuser): 511 no mailbox here by that name',
    script: {
      extensions: ['PIPELINING', '8BITMIME'],
      on: annOnly(() => '511 sorry, no mailbox here by that name (#5.1.1 - chkuser)\r\n'),
    },
    address: 'bob@example.org',
    expected: ['undeliverable', 'rejected_email'],
  },
  {
    name: 'catch-all: 250 to every recipient',
    script: {},
    expected: ['risky', 'low_deliverability'],
    catchAll: true,
  },
  {
    name: 'accepts every RCPT and would reject after DATA: a catch-all to us',
    script: {
      on: (c) => (c.toUpperCase() === 'DATA' ? '554 5.7.1 rejected after DATA\r\n' : null),
    },
    expected: ['risky', 'low_deliverability'],
    catchAll: true,
  },
  {
    name: 'STARTTLS required: 530 5.7.0 at MAIL FROM',
    script: {
      extensions: ['PIPELINING'],
      on: (c) =>
        c.startsWith('MAIL') ? '530 5.7.0 Must issue a STARTTLS command first\r\n' : null,
    },
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: 'STARTTLS required: 530 5.7.0 at MAIL FROM, offered but its 220 never starts TLS',
    script: {
      extensions: ['PIPELINING', 'STARTTLS'],
      on: (c) =>
        c.startsWith('MAIL')
          ? '530 5.7.0 Must issue a STARTTLS command first\r\n'
          : c === 'STARTTLS'
            ? '454 4.7.0 TLS not available due to local problem\r\n'
            : null,
    },
    expected: ['risky', 'unavailable_smtp'],
  },
  ...(['banner', 'EHLO', 'MAIL', 'RCPT'] as const).map((step): Row => ({
    name: `421 at ${step}`,
    script:
      step === 'banner'
        ? { banner: '421 4.7.0 mx.test Service not available, closing transmission channel\r\n' }
        : {
            on: (c) =>
              c.toUpperCase().startsWith(step)
                ? '421 4.7.0 mx.test Service not available, closing transmission channel\r\n'
                : null,
          },
    expected: ['risky', 'unavailable_smtp'],
  })),
  {
    name: 'a multi-line reply whose lines carry different codes is not a rejection',
    script: {
      on: annOnly(() => '550-5.1.1 User unknown\r\n451 4.3.0 Try again later\r\n'),
    },
    address: 'bob@example.org',
    expected: ['risky', 'invalid_smtp'],
  },
  {
    name: 'a multi-line 550 whose later line is about our IP',
    script: {
      on: annOnly(
        () =>
          '550-5.1.1 Recipient rejected\r\n550 5.7.1 Client host [192.0.2.1] blocked using zen.spamhaus.org\r\n',
      ),
    },
    address: 'bob@example.org',
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: 'drops the connection after RCPT',
    script: { on: (c) => (c.startsWith('RCPT') ? 'drop' : null), extensions: [] },
    expected: ['risky', 'no_connect'],
  },
  {
    name: 'resets the connection after RCPT',
    script: { on: (c) => (c.startsWith('RCPT') ? 'reset' : null), extensions: [] },
    expected: ['risky', 'no_connect'],
  },
  {
    name: 'a slow banner inside the banner timeout is waited for',
    script: { bannerDelayMs: 600, on: annOnly() },
    expected: ['deliverable', 'accepted_email'],
  },
  {
    name: 'Gmail: 452 4.2.2 over quota',
    script: {
      on: (c) =>
        c.startsWith('RCPT') && !isRandom(c)
          ? "452-4.2.2 The recipient's inbox is out of storage space. Please direct the\r\n452-4.2.2 recipient to\r\n452 4.2.2  https://support.google.com/mail/?p=OverQuotaTemp - gsmtp\r\n"
          : c.startsWith('RCPT')
            ? '550 5.1.1 no such user\r\n'
            : null,
    },
    expected: ['risky', 'low_deliverability'],
    code: 'mailbox_full',
  },
  {
    name: 'Gmail: 421-4.7.0 multi-line at RCPT',
    script: {
      on: (c) =>
        c.startsWith('RCPT')
          ? '421-4.7.0 [192.0.2.1] Our system has detected an unusual rate of\r\n421-4.7.0 unsolicited mail originating from your IP address. To protect our\r\n421 4.7.0 users from spam, mail sent from your IP address has been temporarily rate limited.\r\n'
          : null,
    },
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: 'Spamhaus block at RCPT worded as a recipient rejection',
    script: {
      on: (c) =>
        c.startsWith('RCPT')
          ? `554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/192.0.2.1\r\n`
          : null,
    },
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: 'a greylisting 451 at MAIL FROM',
    script: {
      on: (c) =>
        c.startsWith('MAIL') ? '451 4.7.1 Greylisting in action, please come back later\r\n' : null,
    },
    expected: ['risky', 'unavailable_smtp'],
    code: 'greylisted',
  },
  {
    name: 'a 554 banner with no SMTP service',
    script: { banner: '554 mx.test ESMTP No SMTP service here\r\n' },
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: 'closes right after the banner',
    script: { banner: '220 mx.test ESMTP\r\n', on: (c) => (c.startsWith('EHLO') ? 'drop' : null) },
    expected: ['risky', 'no_connect'],
  },
  {
    name: 'HELO only: 502 to EHLO',
    script: {
      on: (c) =>
        c.startsWith('EHLO') ? '502 5.5.2 Error: command not recognized\r\n' : annOnly()(c),
    },
    expected: ['deliverable', 'accepted_email'],
  },
  {
    name: 'a bare LF server',
    script: {
      on: (c) =>
        c.startsWith('EHLO')
          ? '250-mx.test\n250 PIPELINING\n'
          : c.startsWith('RCPT')
            ? (annOnly()(c) as string).replace('\r\n', '\n')
            : null,
    },
    expected: ['deliverable', 'accepted_email'],
  },
  {
    name: '252 cannot verify',
    script: {
      on: (c) =>
        c.startsWith('RCPT') ? '252 2.1.5 Cannot VRFY user, but will accept message\r\n' : null,
    },
    expected: ['risky', 'unavailable_smtp'],
  },
  {
    name: '550 5.7.1 "Recipient address rejected: Access denied" (Postfix check_recipient_access)',
    script: {
      on: (c) =>
        c.startsWith('RCPT')
          ? `554 5.7.1 <${recipient(c)}>: Recipient address rejected: Access denied\r\n`
          : null,
    },
    expected: ['risky', 'unavailable_smtp'],
  },
];

describe('scripted real-world SMTP servers', () => {
  it.each(ROWS.map((row) => [row.name, row] as const))('%s', async (_name, row) => {
    const server = await serve(row.script);
    const [verdict] = await verify(server, [row.address ?? 'ann@example.org']);
    expect([verdict?.state, verdict?.reason]).toEqual(row.expected);
    if (row.code !== undefined) expect(smtpCode(verdict)).toBe(row.code);
    if (row.catchAll !== undefined) expect(verdict?.catchAll).toBe(row.catchAll);
    expect(server.commands.some((c) => c.toUpperCase().startsWith('DATA'))).toBe(false);
  });
});

describe('scripted servers: several MX hosts', () => {
  const TWO_HOSTS = { 'mx1.example.org': ['127.0.0.1'], 'mx2.example.org': ['127.0.0.1'] };
  const WORKS: Script = { on: annOnly() };

  it('MX1 refuses the connection, MX2 answers', async () => {
    const server = await serve(WORKS);
    const [verdict] = await verify(server, ['ann@example.org'], {
      hosts: { 'mx1.example.org': ['::1'], 'mx2.example.org': ['127.0.0.1'] },
    });
    expect([verdict?.state, verdict?.reason]).toEqual(['deliverable', 'accepted_email']);
  });

  for (const [name, down] of [
    ['greets with 421', { banner: '421 4.3.2 Service not active\r\n' }],
    ['greets with 450', { banner: '450 4.3.2 Too busy\r\n' }],
    ['closes before greeting', { banner: '', dropAtConnect: true }],
    ['drops the connection at RCPT', { on: (c: string) => (c.startsWith('RCPT') ? 'drop' : null) }],
    ['421 at EHLO', { on: (c: string) => (c.startsWith('EHLO') ? '421 4.7.0 busy\r\n' : null) }],
  ] as const) {
    it(`MX1 ${name}, MX2 answers`, async () => {
      const server = await serve([down as Script, WORKS]);
      const verdicts = await verify(server, ['ann@example.org', 'bob@example.org'], {
        hosts: TWO_HOSTS,
      });
      expect(verdicts.map((v) => [v.state, v.reason])).toEqual([
        ['deliverable', 'accepted_email'],
        ['undeliverable', 'rejected_email'],
      ]);
      expect(server.connections()).toBe(2);
    });
  }
});

/** Four addresses, ann's deliverable, for servers that limit recipients; and their verdicts. */
const ADDRESSES = ['ann@example.org', 'bob@example.org', 'ann2@example.org', 'cy@example.org'];
const TRUTH = [
  ['deliverable', 'accepted_email'],
  ['undeliverable', 'rejected_email'],
  ['deliverable', 'accepted_email'],
  ['undeliverable', 'rejected_email'],
];

describe('scripted servers: recipient limits', () => {
  for (const [name, limit] of [
    [
      '452 4.5.3 per transaction',
      (c: Conversation) => (c.rcpts > 2 ? '452 4.5.3 Error: too many recipients\r\n' : null),
    ],
    [
      '552 5.5.3 per transaction',
      (c: Conversation) => (c.rcpts > 2 ? '552 5.5.3 Too many recipients\r\n' : null),
    ],
    [
      '452 without a code per transaction',
      (c: Conversation) =>
        c.rcpts > 1 ? '452 Too many recipients received this message\r\n' : null,
    ],
  ] as const) {
    for (const extensions of [['PIPELINING', 'ENHANCEDSTATUSCODES'], []]) {
      it(`${name}${extensions.length === 0 ? ', no PIPELINING' : ''}`, async () => {
        const server = await serve({
          extensions,
          on: (command, conversation) =>
            command.startsWith('RCPT') ? (limit(conversation) ?? annOnly()(command)) : null,
        });
        const verdicts = await verify(server, ADDRESSES);
        expect(verdicts.map((v) => [v.state, v.reason])).toEqual(TRUTH);
      });
    }
  }

  it('per session: 452 4.5.3 after two recipients on a connection', async () => {
    const perConnection = new Map<number, number>();
    const server = await serve({
      on: (command, conversation) => {
        if (!command.startsWith('RCPT')) return null;
        const seen = (perConnection.get(conversation.connection) ?? 0) + 1;
        perConnection.set(conversation.connection, seen);
        return seen > 2 ? '452 4.5.3 Too many recipients for this session\r\n' : annOnly()(command);
      },
    });
    const verdicts = await verify(server, ADDRESSES);
    expect(verdicts.map((v) => [v.state, v.reason])).toEqual(TRUTH);
  });
});

describe('scripted servers: a tarpit MX', () => {
  it('MX1 takes the connection and never greets, MX2 (another address) answers', async () => {
    const tarpit = await serve({ banner: undefined });
    const works = await serve({ on: annOnly() }, '::1', tarpit.port);
    const verdicts = await verify(tarpit, ['ann@example.org', 'bob@example.org'], {
      hosts: { 'mx1.example.org': ['127.0.0.1'], 'mx2.example.org': ['::1'] },
    });
    expect(verdicts.map((v) => [v.state, v.reason])).toEqual([
      ['deliverable', 'accepted_email'],
      ['undeliverable', 'rejected_email'],
    ]);
    expect([tarpit.connections(), works.connections()]).toEqual([1, 1]);
    await expectAllClosed(works);
  });

  it('MX names that share the tarpit address are not waited for again', async () => {
    const tarpit = await serve({ banner: undefined });
    const [verdict] = await verify(tarpit, ['ann@example.org'], {
      hosts: { 'mx1.example.org': ['127.0.0.1'], 'mx2.example.org': ['127.0.0.1'] },
    });
    expect([verdict?.state, verdict?.reason]).toEqual(['risky', 'timeout']);
    expect(tarpit.connections()).toBe(1);
  });
});

describe('scripted servers: sessions that end after a few recipients', () => {
  for (const [name, limit] of [
    [
      '452 4.5.3 past two recipients, then the connection is closed',
      '452 4.5.3 Too many recipients\r\n',
    ],
    ['421 4.5.3 past two recipients', '421 4.5.3 Too many recipients, closing connection\r\n'],
    [
      '421 4.7.0 too many errors past two recipients',
      '421 4.7.0 mx.test Error: too many errors\r\n',
    ],
  ] as const) {
    it(`${name}: the rest are asked in a new session`, async () => {
      const server = await serve({
        extensions: [],
        on: (command, conversation) => {
          if (!command.startsWith('RCPT')) return null;
          if (conversation.rcpts <= 2) return annOnly()(command);
          // The server closes after its limit, as servers counting per connection may.
          return { say: limit, close: true };
        },
      });
      const verdicts = await verify(server, ADDRESSES, { smtp: { recipientsPerTransaction: 50 } });
      expect(verdicts.map((v) => [v.state, v.reason])).toEqual(TRUTH);
    });
  }

  it('a 421 rate limit on our IP past two recipients: the host is not asked again', async () => {
    // Gmail's wording (reply corpus): a rate limit on us, so a new session would only add
    // load to a server that asked us to slow down; the rest stay unknown.
    const server = await serve({
      extensions: [],
      on: (command, conversation) => {
        if (!command.startsWith('RCPT')) return null;
        if (conversation.rcpts <= 2) return annOnly()(command);
        return {
          say: '421-4.7.0 [192.0.2.1] Our system has detected an unusual rate of\r\n421 4.7.0 unsolicited mail originating from your IP address.\r\n',
          close: true,
        };
      },
    });
    const verdicts = await verify(server, ADDRESSES, { smtp: { recipientsPerTransaction: 50 } });
    // The catch-all probe and ann were answered before the 421.
    expect(verdicts.map((v) => [v.state, v.reason])).toEqual([
      ['deliverable', 'accepted_email'],
      ['risky', 'unavailable_smtp'],
      ['risky', 'unavailable_smtp'],
      ['risky', 'unavailable_smtp'],
    ]);
    expect(server.connections()).toBe(1);
  });

  it('a server that answers one RCPT a connection, then drops it', async () => {
    const server = await serve({
      extensions: [],
      on: (command, conversation) =>
        command.startsWith('RCPT') && conversation.rcpts > 1 ? 'drop' : annOnly()(command),
    });
    const verdicts = await verify(server, ADDRESSES);
    expect(verdicts.map((v) => [v.state, v.reason])).toEqual(TRUTH);
  });

  it('a server that drops every connection at its first RCPT stays unknown, and ends', async () => {
    const server = await serve({ on: (command) => (command.startsWith('RCPT') ? 'drop' : null) });
    const verdicts = await verify(server, ADDRESSES.slice(0, 2));
    for (const verdict of verdicts) {
      expect([verdict.state, verdict.reason]).toEqual(['risky', 'no_connect']);
    }
    expect(server.connections()).toBe(1);
  });
});

describe('scripted servers: Outlook.com answering one recipient a connection', () => {
  // AfterShip/email-verifier#72 and reacher#569: after the random address, Outlook.com's MX
  // answers further RCPTs of the connection "4.5.3 Too many recipients (AS780090)".
  it('the address after the catch-all probe is asked in a new session, never judged by the 452', async () => {
    const seen = new Map<number, number>();
    const server = await serve({
      banner:
        '220 AM4PEPF00027A5F.mail.protection.outlook.com Microsoft ESMTP MAIL Service ready\r\n',
      on: (command, conversation) => {
        if (!command.startsWith('RCPT')) return null;
        const count = (seen.get(conversation.connection) ?? 0) + 1;
        seen.set(conversation.connection, count);
        if (count > 1) {
          return '452 4.5.3 Too many recipients (AS780090) [SN1NAM02FT003.eop-nam02.prod.protection.outlook.com]\r\n';
        }
        return annOnly(
          () => '550 5.5.0 Requested action not taken: mailbox unavailable (S2017062302)\r\n',
        )(command);
      },
    });
    const verdicts = await verify(server, ['ann@example.org', 'bob@example.org']);
    expect(verdicts.map((v) => [v.state, v.reason])).toEqual([
      ['deliverable', 'accepted_email'],
      ['risky', 'unavailable_smtp'],
    ]);
    expect(verdicts[0]?.riskFactors).not.toContain('catch_all');
  });
});

describe('scripted servers: 421 between transactions', () => {
  it('421 to RSET after the catch-all probe: the address is asked in a new session', async () => {
    const server = await serve({
      on: (c) =>
        c === 'RSET' ? '421 4.7.0 mx.test closing transmission channel\r\n' : annOnly()(c),
    });
    const [verdict] = await verify(server, ['ann@example.org'], {
      smtp: { recipientsPerTransaction: 1 },
    });
    expect([verdict?.state, verdict?.reason, verdict?.catchAll]).toEqual([
      'deliverable',
      'accepted_email',
      false,
    ]);
    expect(server.connections()).toBe(2);
  });
});

describe('scripted servers: SMTPUTF8', () => {
  it('a UTF-8 local part is asked of a server that offers SMTPUTF8', async () => {
    const server = await serve({
      extensions: ['PIPELINING', 'SMTPUTF8'],
      on: (c) =>
        c.startsWith('MAIL') && !c.endsWith(' SMTPUTF8')
          ? '553 5.6.7 SMTPUTF8 needed\r\n'
          : c.startsWith('RCPT')
            ? recipient(c).startsWith('jörg@')
              ? '250 2.1.5 Ok\r\n'
              : '550 5.1.1 User unknown\r\n'
            : null,
    });
    const [verdict] = await verify(server, ['jörg@example.org']);
    expect([verdict?.state, verdict?.reason]).toEqual(['deliverable', 'accepted_email']);
  });

  it('a UTF-8 local part is never sent to a server without SMTPUTF8', async () => {
    const server = await serve({ extensions: ['PIPELINING'], on: annOnly() });
    const [verdict] = await verify(server, ['jörg@example.org']);
    expect(server.commands.join('\n')).not.toContain('jörg');
    expect(verdict?.state).not.toBe('deliverable');
  });
});

describe('scripted servers: tarpits and deadlines', () => {
  it('a server silent after RCPT times out, socket closed', async () => {
    const server = await serve({ on: (c) => (c.startsWith('RCPT') ? undefined : null) });
    const [verdict] = await verify(server, ['ann@example.org']);
    expect([verdict?.state, verdict?.reason]).toEqual(['risky', 'timeout']);
  });
});

describe('scripted servers: greylisting', () => {
  /** postgrey: each (sender, recipient) is put off once, then passed to what is behind it. */
  function postgrey(behind: (command: string) => Answer | null): Script {
    const seen = new Set<string>();
    return {
      banner: '220 mail.example.org ESMTP Postfix (Debian/GNU)\r\n',
      on: (command) => {
        if (!command.startsWith('RCPT')) return null;
        const rcpt = recipient(command);
        if (!seen.has(rcpt)) {
          seen.add(rcpt);
          return `450 4.2.0 <${rcpt}>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/example.org.html\r\n`;
        }
        return behind(command);
      },
    };
  }

  async function verifyRetrying(server: ScriptedServer, address: string): Promise<Verdict> {
    const engine = createEngine({
      dns: createMemoryDns(
        { 'example.org': ['mx.example.org'] },
        { 'mx.example.org': ['127.0.0.1'] },
      ),
      smtpOptions: { ...SMTP_OPTIONS, port: server.port },
      greylistRetryMs: 50,
    });
    return engine.verify(address, { method: 'smtp', retryGreylisted: true });
  }

  it('answers at once by default: greylisted, unknown', async () => {
    const server = await serve(postgrey(annOnly()));
    const [verdict] = await verify(server, ['ann@example.org']);
    expect([verdict?.state, verdict?.reason]).toEqual(['risky', 'unavailable_smtp']);
    expect(verdict?.riskFactors).toContain('greylisted');
  });

  it('retried in front of a catch-all: the retry asks the random address too', async () => {
    const server = await serve(postgrey(() => '250 2.1.5 Ok\r\n'));
    const verdict = await verifyRetrying(server, 'ann@example.org');
    expect([verdict.state, verdict.reason, verdict.catchAll]).toEqual([
      'risky',
      'low_deliverability',
      true,
    ]);
  });

  it('retried in front of a server that knows its mailboxes', async () => {
    const server = await serve(postgrey(annOnly()));
    const verdict = await verifyRetrying(server, 'ann@example.org');
    expect([verdict.state, verdict.reason, verdict.catchAll]).toEqual([
      'deliverable',
      'accepted_email',
      false,
    ]);
    const missing = await verifyRetrying(server, 'bob@example.org');
    expect([missing.state, missing.reason]).toEqual(['undeliverable', 'rejected_email']);
  });
});

describe('scripted servers: the reply recorded', () => {
  it('each answer records the reply as the port describes it: code, enhanced code, text, host', async () => {
    const server = await serve({
      on: annOnly(
        () =>
          '550-5.1.1 The email account that you tried to reach does not exist. Please try\r\n' +
          "550 5.1.1 double-checking the recipient's email address - gsmtp\r\n",
      ),
    });
    const prober = createNodeSmtp({ ...SMTP_OPTIONS, port: server.port });
    const report = await prober.probe({
      domain: 'example.org',
      hosts: ['mx.example.org', '127.0.0.1'],
      recipients: [
        { address: 'ann@example.org', smtpUtf8: false },
        { address: 'bob@example.org', smtpUtf8: false },
      ],
    });
    expect(report.recipients).toEqual([
      {
        class: 'accepted',
        reply: { code: 250, enhanced: '2.1.5', text: 'Ok' },
        host: '127.0.0.1',
      },
      {
        class: 'rejected',
        reply: {
          code: 550,
          enhanced: '5.1.1',
          text: "The email account that you tried to reach does not exist. Please try double-checking the recipient's email address - gsmtp",
        },
        host: '127.0.0.1',
      },
    ]);
  });

  it('a refused MAIL FROM is recorded for every recipient of the session', async () => {
    const server = await serve({
      on: (c) =>
        c.startsWith('MAIL') ? '553 5.1.7 The sender address is not a valid address.\r\n' : null,
    });
    const prober = createNodeSmtp({ ...SMTP_OPTIONS, port: server.port });
    const report = await prober.probe({
      domain: 'example.org',
      hosts: ['127.0.0.1'],
      recipients: [{ address: 'ann@example.org', smtpUtf8: false }],
    });
    expect(report.recipients).toEqual([
      {
        class: 'sender_refused',
        reply: { code: 553, enhanced: '5.1.7', text: 'The sender address is not a valid address.' },
        host: '127.0.0.1',
      },
    ]);
  });
});

/** One address through `engine.verify` (smtp method), every socket closed after. */
async function verifyOne(
  server: ScriptedServer,
  address: string,
  profile: 'default' | 'rfc' = 'default',
): Promise<Verdict> {
  const domain = address.slice(address.lastIndexOf('@') + 1);
  const engine = createEngine({
    dns: createMemoryDns({ [domain]: ['mx.example.org'] }, { 'mx.example.org': ['127.0.0.1'] }),
    smtpOptions: { ...SMTP_OPTIONS, port: server.port },
    parse: { profile },
  });
  const verdict = await engine.verify(address, { method: 'smtp' });
  await expectAllClosed(server);
  return verdict;
}

/** The RCPT commands a server received for `address`, whatever the case it was sent in. */
const rcptsFor = (server: ScriptedServer, address: string) =>
  server.commands.filter(
    (c) => c.toUpperCase().startsWith('RCPT') && recipient(c).toLowerCase() === address,
  ).length;

/** A server that refuses `address` with `refusal` (which may echo it) and takes anything else. */
const refusing = (address: string, refusal: (rcpt: string) => string): Script => ({
  on: (c) =>
    c.startsWith('RCPT')
      ? recipient(c).toLowerCase() === address
        ? `${refusal(recipient(c))}\r\n`
        : '550 5.1.1 User unknown\r\n'
      : null,
});

describe('scripted servers: the server is judged by its own words, not the address it echoes', () => {
  // Replies without an enhanced code, so the text decides, each echoing the recipient the way
  // the server does; the recipients are built from the words that mean "about us".
  const ECHOES: ReadonlyArray<
    readonly [server: string, address: string, refusal: (r: string) => string]
  > = [
    // smtp.codes/550: Barracuda "550 No such user (email@example.com)".
    ['Barracuda', 'relay@ip-law.example.net', (r) => `550 No such user (${r})`],
    // Mail.ru, as reacher and sisimai record it: the address bare, mid-sentence.
    [
      'Mail.ru',
      'abuse@client-portal.example.net',
      (r) =>
        `550 Message was not accepted -- invalid mailbox.  Local mailbox ${r} is unavailable: user not found`,
    ],
    // Yahoo names the recipient's domain as well as the address.
    [
      'Yahoo',
      'policy.blocked@ehlo-systems.example.net',
      (r) =>
        `554 delivery error: dd This user doesn't have a ${r.slice(r.indexOf('@') + 1)} account (${r}) [0] - mta1064.mail.ird.yahoo.com`,
    ],
    // Sendmail without enhanced codes: "<x@y>... User unknown".
    ['Sendmail', 'spam-reports@ip-law.example.net', (r) => `550 <${r}>... User unknown`],
    // An X.7.x whose text says the recipient does not exist (Tutanota) echoes it in brackets.
    [
      'Tutanota',
      'denied@client-portal.example.net',
      (r) => `550 5.7.1 <${r}>: Recipient address rejected: Recipient not found`,
    ],
    // Exchange Online's Directory-Based Edge Blocking echoes it in square brackets.
    [
      'Exchange Online',
      'helo@ehlo-systems.example.net',
      (r) =>
        `550 5.4.1 [${r}]: Recipient address rejected: Access denied. AS(201806281) [DB5EUR01FT088.eop-EUR01.prod.protection.outlook.com]`,
    ],
  ];

  it.each(ECHOES)('%s: %s is a missing mailbox', async (_server, address, refusal) => {
    const server = await serve(refusing(address, refusal));
    const verdict = await verifyOne(server, address);
    expect([verdict.state, verdict.reason]).toEqual(['undeliverable', 'rejected_email']);
    expect(smtpCode(verdict)).toBe('mailbox_not_found');
  });

  it('a quoted local part (rfc profile) echoed back is still only an echo', async () => {
    const address = '"client relay"@ip-law.example.net';
    const server = await serve({
      on: (c) =>
        c.startsWith('RCPT')
          ? c.includes('"client relay"')
            ? `550 User ${recipient(c)} unknown\r\n`
            : '550 5.1.1 User unknown\r\n'
          : null,
    });
    const verdict = await verifyOne(server, address, 'rfc');
    expect([verdict.state, verdict.reason]).toEqual(['undeliverable', 'rejected_email']);
  });

  it('the same servers still refuse us when their own words are about us', async () => {
    const address = 'relay@ip-law.example.net';
    const server = await serve(
      refusing(address, (r) => `554 5.7.1 <${r}>: Recipient address rejected: Access denied`),
    );
    const verdict = await verifyOne(server, address);
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'unavailable_smtp']);
  });
});

describe('scripted servers: a policy code whose words say the recipient does not exist', () => {
  for (const [name, refusal] of [
    // Yandex's NwSMTP (src/smtp_connection.cpp) answers an unknown recipient this way.
    ['Yandex: 550 5.7.1 No such user!', '550 5.7.1 No such user!'],
    // qmail-ldap behind a Postfix relay (dada-mail's bounce parser records it).
    ['qmail-ldap: (#5.7.17)', '550 sorry, no mailbox here by that name. (#5.7.17)'],
    // Microsoft documents Directory-Based Edge Blocking's AS(201806281) as "recipient not found".
    [
      'Exchange Online DBEB: 5.4.1 ... AS(201806281)',
      '550 5.4.1 Recipient address rejected: Access denied. AS(201806281) [PR2FRA01FT009.eop-fra01.prod.protection.outlook.com]',
    ],
  ] as const) {
    it(`${name} is a missing mailbox`, async () => {
      const server = await serve(refusing('bob@example.org', () => refusal));
      const verdict = await verifyOne(server, 'bob@example.org');
      expect([verdict.state, verdict.reason]).toEqual(['undeliverable', 'rejected_email']);
      expect(smtpCode(verdict)).toBe('mailbox_not_found');
    });
  }

  it('Postfix: 554 5.7.1 Recipient address rejected: Access denied stays policy', async () => {
    const server = await serve(
      refusing(
        'bob@example.org',
        (r) => `554 5.7.1 <${r}>: Recipient address rejected: Access denied`,
      ),
    );
    const verdict = await verifyOne(server, 'bob@example.org');
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'unavailable_smtp']);
    expect(smtpCode(verdict)).toBe('sender_blocked');
  });
});

describe('scripted servers: a rate limit on our client is not "too many recipients"', () => {
  // Postfix smtpd_client_recipient_rate_limit (smtpd.c): past the limit, every RCPT from the
  // client gets "450 4.7.1 Error: too many recipients from <client address>", in this
  // transaction or the next. A retry only adds load to a server that asked us to slow down.
  for (const [name, limited] of [
    [
      'Postfix: 450 4.7.1 Error: too many recipients from 127.0.0.1',
      '450 4.7.1 Error: too many recipients from 127.0.0.1\r\n',
    ],
    ['the same without an enhanced code', '450 Error: too many recipients from 127.0.0.1\r\n'],
    ['Postfix over IPv6', '450 4.7.1 Error: too many recipients from 2001:db8::25\r\n'],
  ] as const) {
    it(`${name}: unknown, and never asked again`, async () => {
      let rcpts = 0;
      const server = await serve({
        on: (c) => (c.startsWith('RCPT') ? (++rcpts > 1 ? limited : annOnly()(c)) : null),
      });
      const verdict = await verifyOne(server, 'ann@example.org');
      expect([verdict.state, verdict.reason]).toEqual(['risky', 'unavailable_smtp']);
      expect(smtpCode(verdict)).toBe('sender_blocked');
      expect(rcptsFor(server, 'ann@example.org')).toBe(1);
      expect(server.commands.filter((c) => c.startsWith('MAIL'))).toHaveLength(1);
      expect(server.connections()).toBe(1);
    });
  }

  it('Gmail: 452-4.5.3 Your message has too many recipients is the transaction limit: asked again', async () => {
    const server = await serve({
      on: (c, conversation) =>
        c.startsWith('RCPT')
          ? conversation.rcpts > 1
            ? "452-4.5.3 Your message has too many recipients. For more information regarding\r\n452 4.5.3 Google's sending limits, visit https://support.google.com/mail/answer/6592 - gsmtp\r\n"
            : annOnly()(c)
          : null,
    });
    const verdict = await verifyOne(server, 'ann@example.org');
    expect([verdict.state, verdict.reason]).toEqual(['deliverable', 'accepted_email']);
    expect(rcptsFor(server, 'ann@example.org')).toBe(2);
  });
});
