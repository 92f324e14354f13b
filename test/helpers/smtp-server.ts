import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import type { NodeSmtpOptions } from '../../src/adapters/node/smtp.js';

/** How the scripted server answers RCPT TO for one address: accept, or a coded refusal. */
/** Prober options for test servers on loopback: private addresses allowed, short deadlines. */
export const LOOPBACK_SMTP_OPTIONS: Partial<NodeSmtpOptions> = {
  allowPrivateNetworks: true,
  heloName: 'probe.example.net',
  mailFrom: 'verify@example.net',
  connectTimeoutMs: 1_000,
  bannerTimeoutMs: 1_000,
  commandTimeoutMs: 1_000,
  sessionDeadlineMs: 3_000,
  quitTimeoutMs: 200,
};

export type RcptScript = 'accept' | { code: number; message: string };

export interface ScriptedServer {
  readonly port: number;
  /** Connections accepted so far. */
  readonly connections: () => number;
  /** Most connections open at one time. */
  readonly maxConcurrent: () => number;
  /** Sessions that completed a STARTTLS handshake. */
  readonly tlsSessions: () => number;
  /** Every RCPT address received, in order. */
  readonly rcpts: string[];
  /** Every MAIL FROM received with its SMTPUTF8 flag. */
  readonly mails: Array<{ address: string; utf8: boolean }>;
  close(): Promise<void>;
}

export interface ScriptOptions {
  /** Answer per address (lower-cased); others get `otherwise`. */
  readonly mailboxes?: Readonly<Record<string, RcptScript>>;
  /** Domains that accept any local part. */
  readonly catchAllDomains?: readonly string[];
  /** Answer for addresses not listed. Default 550 5.1.1 user unknown. */
  readonly otherwise?: RcptScript;
  /** A function deciding per call, for greylisting and the like. */
  readonly rcpt?: (address: string, attempt: number) => RcptScript | undefined;
  /** Each RCPT answer leaves this long after the command: a server that thinks, so sessions overlap. */
  readonly rcptDelayMs?: number;
  readonly server?: Partial<SMTPServerOptions>;
}

const UNKNOWN: RcptScript = {
  code: 550,
  message: '5.1.1 <user>: Recipient address rejected: User unknown',
};

/** nodemailer's smtp-server on 127.0.0.1, on a port the system picks, answering by script. */
export async function startScriptedServer(script: ScriptOptions = {}): Promise<ScriptedServer> {
  let connections = 0;
  let open = 0;
  let maxConcurrent = 0;
  let tlsSessions = 0;
  const rcpts: string[] = [];
  const mails: Array<{ address: string; utf8: boolean }> = [];
  const attempts = new Map<string, number>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH'],
    disableReverseLookup: true,
    logger: false,
    hideSTARTTLS: true,
    onConnect(_session, callback) {
      connections++;
      maxConcurrent = Math.max(maxConcurrent, ++open);
      callback();
    },
    onClose() {
      open--;
    },
    onSecure(_socket, _session, callback) {
      tlsSessions++;
      callback();
    },
    onMailFrom(address, session, callback) {
      mails.push({ address: address.address, utf8: session.envelope.smtpUtf8 === true });
      callback();
    },
    onRcptTo(address, _session, callback) {
      const email = address.address.toLowerCase();
      rcpts.push(email);
      const attempt = (attempts.get(email) ?? 0) + 1;
      attempts.set(email, attempt);
      const domain = email.slice(email.lastIndexOf('@') + 1);
      const answer =
        script.rcpt?.(email, attempt) ??
        script.mailboxes?.[email] ??
        (script.catchAllDomains?.includes(domain) ? 'accept' : (script.otherwise ?? UNKNOWN));
      const reply = () => {
        if (answer === 'accept') return callback();
        const error = new Error(answer.message) as Error & { responseCode: number };
        error.responseCode = answer.code;
        callback(error);
      };
      if (script.rcptDelayMs === undefined) reply();
      else setTimeout(reply, script.rcptDelayMs);
    },
    ...script.server,
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    connections: () => connections,
    maxConcurrent: () => maxConcurrent,
    tlsSessions: () => tlsSessions,
    rcpts,
    mails,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
