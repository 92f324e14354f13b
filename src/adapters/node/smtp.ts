import { isIP, Socket } from 'node:net';
import { hostname } from 'node:os';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import type {
  ProbeAnswer,
  ProbeClass,
  ProbeRecipient,
  ProbeReport,
  ProbeRequest,
  SmtpProber,
  SharedHostSlots,
} from '../../ports/smtp.js';
import { literalAddress } from '../../address/ip-literal.js';
import { assertSmtpIdentity } from '../../smtp/commands.js';
import { endsOnUs } from '../../smtp/classify.js';
import { ConnectionLimits } from '../../smtp/connection-limits.js';
import { MAX_REPLY_BYTES, ReplyReader, type SmtpReply } from '../../smtp/reply.js';
import {
  ProbeSession,
  type ConnectionFailure,
  type SessionAction,
  type SessionFailure,
} from '../../smtp/session.js';
import { isPublicAddress } from '../../smtp/target-policy.js';
import { parseProxyUrls } from '../../smtp/proxy-url.js';
import { MAX_CONNECTIONS_PER_PROXY, ProxyPool } from './socks-connect.js';

/** Named defaults, each overridden by the option of the same meaning. */
export const SMTP_PORT = 25;
export const CONNECT_TIMEOUT_MS = 10_000;
/** RFC 5321 4.5.3.2.1 allows 5 minutes for the greeting; probes that wait that long stall. */
export const BANNER_TIMEOUT_MS = 30_000;
export const COMMAND_TIMEOUT_MS = 20_000;
export const SESSION_DEADLINE_MS = 60_000;
/** How long QUIT waits for its 221 (RFC 5321 4.1.1.10) before we close anyway. */
export const QUIT_TIMEOUT_MS = 2_000;
export const MAX_CONNECTIONS_PER_HOST = 2;
export const MAX_CONNECTIONS = 50;
export const RECIPIENTS_PER_SESSION = 50;
export const RECIPIENTS_PER_TRANSACTION = 20;
export const MAX_HOSTS_PER_PROBE = 3;

export interface NodeSmtpOptions {
  /** The name we greet with (EHLO). Default: this machine's host name, with a warning. */
  readonly heloName?: string;
  /** The envelope sender. Default: `verify@<heloName>`, with a warning. '' sends `<>`. */
  readonly mailFrom?: string;
  /** Port of the mail hosts; 25 in production, anything in tests. */
  readonly port?: number;
  readonly connectTimeoutMs?: number;
  readonly bannerTimeoutMs?: number;
  /** Wait for each reply after a command (a pipelined group counts as one). */
  readonly commandTimeoutMs?: number;
  /** Deadline of one whole session, connect to QUIT. */
  readonly sessionDeadlineMs?: number;
  /** Wait for the 221 after QUIT; the answers are known by then, so this only bounds politeness. */
  readonly quitTimeoutMs?: number;
  /** Opportunistic STARTTLS (default true) and whether certificates must verify (false). */
  readonly tls?: { readonly startTls?: boolean; readonly rejectUnauthorized?: boolean };
  readonly maxReplyBytes?: number;
  readonly maxConnectionsPerHost?: number;
  readonly maxConnections?: number;
  /**
   * A per-host limit that other processes share (`createRedisHostSlots` from
   * mailverdict/bullmq): with several workers, each session also holds one of its slots, so
   * scaling out never opens more sessions to one mail host than it allows.
   */
  readonly sharedHostSlots?: SharedHostSlots;
  readonly recipientsPerSession?: number;
  readonly recipientsPerTransaction?: number;
  /**
   * How many MX hosts one probe tries, in order, when a host cannot be reached, never greets
   * or says 421.
   */
  readonly maxHostsPerProbe?: number;
  /**
   * SOCKS5 proxies to probe through (`socks5://[user:pass@]host:port`), for machines whose
   * port 25 is blocked. Each session takes the least busy proxy. Checked when the prober is
   * created: a bad URL throws a TypeError naming it (password hidden).
   */
  readonly proxies?: readonly string[];
  /** Simultaneous sessions through one proxy. */
  readonly maxConnectionsPerProxy?: number;
  /** Connect to loopback, private, link-local and other non-public addresses (tests only). */
  readonly allowPrivateNetworks?: boolean;
  /** Resolves an MX host name to IP addresses. Default: none found (set by createEngine). */
  readonly resolveHost?: (host: string, signal: AbortSignal) => Promise<readonly string[]>;
  /** Told once when a production setting falls back to a default. Default: process warning. */
  readonly onWarning?: (message: string) => void;
}

type Resolved = Required<
  Omit<
    NodeSmtpOptions,
    'tls' | 'onWarning' | 'proxies' | 'maxConnectionsPerProxy' | 'sharedHostSlots'
  >
> & {
  readonly sharedHostSlots: SharedHostSlots | undefined;
  readonly startTls: boolean;
  readonly rejectUnauthorized: boolean;
  /** Absent when probes connect directly. */
  readonly proxies: ProxyPool | undefined;
};

/**
 * The SmtpProber port on node:net and node:tls. Each probe splits its recipients into
 * sessions (`recipientsPerSession`), each session tries the MX hosts in order, and every
 * connection waits for a slot under the per-host and total limits.
 *
 * @example
 * const smtp = createNodeSmtp({ heloName: 'verify.example.com', mailFrom: 'probe@example.com' });
 */
export function createNodeSmtp(options: NodeSmtpOptions = {}): SmtpProber {
  const resolved = resolveOptions(options);
  const limits = new ConnectionLimits(resolved.maxConnectionsPerHost, resolved.maxConnections);
  return {
    probe: (request, signal) => probe(request, resolved, limits, signal),
  };
}

function resolveOptions(options: NodeSmtpOptions): Resolved {
  const warn = options.onWarning ?? ((message) => process.emitWarning(message, 'MailverdictSmtp'));
  let heloName = options.heloName;
  if (heloName === undefined) {
    heloName = hostname();
    warn(
      `SMTP probes greet as '${heloName}' (the host name). Set smtpOptions.heloName to a name ` +
        'whose DNS points back at this machine, or many servers will refuse the probes.',
    );
  }
  let mailFrom = options.mailFrom;
  if (mailFrom === undefined) {
    mailFrom = `verify@${heloName}`;
    warn(
      `SMTP probes send MAIL FROM:<${mailFrom}>; set mailFrom to an address of a domain you own.`,
    );
  }
  assertSmtpIdentity('heloName', heloName);
  assertSmtpIdentity('mailFrom', mailFrom);
  return {
    heloName,
    mailFrom,
    port: options.port ?? SMTP_PORT,
    connectTimeoutMs: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    bannerTimeoutMs: options.bannerTimeoutMs ?? BANNER_TIMEOUT_MS,
    commandTimeoutMs: options.commandTimeoutMs ?? COMMAND_TIMEOUT_MS,
    sessionDeadlineMs: options.sessionDeadlineMs ?? SESSION_DEADLINE_MS,
    quitTimeoutMs: options.quitTimeoutMs ?? QUIT_TIMEOUT_MS,
    startTls: options.tls?.startTls ?? true,
    rejectUnauthorized: options.tls?.rejectUnauthorized ?? false,
    maxReplyBytes: options.maxReplyBytes ?? MAX_REPLY_BYTES,
    maxConnectionsPerHost: options.maxConnectionsPerHost ?? MAX_CONNECTIONS_PER_HOST,
    maxConnections: options.maxConnections ?? MAX_CONNECTIONS,
    recipientsPerSession: Math.max(1, options.recipientsPerSession ?? RECIPIENTS_PER_SESSION),
    recipientsPerTransaction: Math.max(
      1,
      options.recipientsPerTransaction ?? RECIPIENTS_PER_TRANSACTION,
    ),
    maxHostsPerProbe: Math.max(1, options.maxHostsPerProbe ?? MAX_HOSTS_PER_PROBE),
    allowPrivateNetworks: options.allowPrivateNetworks ?? false,
    proxies: proxyPool(options),
    sharedHostSlots: options.sharedHostSlots,
    resolveHost: options.resolveHost ?? (() => Promise.resolve([])),
  };
}

/** The shared slot, a no-op without shared slots, or undefined when none could be had. */
async function acquireShared(
  slots: SharedHostSlots | undefined,
  target: string,
  signal: AbortSignal | undefined,
): Promise<(() => void) | undefined> {
  if (slots === undefined) return () => {};
  try {
    return await slots.acquire(target, signal);
  } catch (error) {
    if (signal?.aborted === true) throw error;
    return undefined;
  }
}

function proxyPool(options: NodeSmtpOptions): ProxyPool | undefined {
  const proxies = parseProxyUrls(options.proxies ?? []);
  if (proxies.length === 0) return undefined;
  return new ProxyPool(proxies, options.maxConnectionsPerProxy ?? MAX_CONNECTIONS_PER_PROXY);
}

async function probe(
  request: ProbeRequest,
  options: Resolved,
  limits: ConnectionLimits,
  signal: AbortSignal | undefined,
): Promise<ProbeReport> {
  signal?.throwIfAborted();
  const all: ProbeRecipient[] = [...request.recipients];
  if (request.catchAllProbe !== undefined) all.unshift(request.catchAllProbe);
  const chunks: ProbeRecipient[][] = [];
  for (let i = 0; i < all.length; i += options.recipientsPerSession) {
    chunks.push(all.slice(i, i + options.recipientsPerSession));
  }
  let connections = 0;
  const countConnection = () => connections++;
  const answered = await Promise.all(
    chunks.map((chunk) => probeChunk(request, chunk, options, limits, countConnection, signal)),
  );
  const answers = answered.flat();
  const catchAll = request.catchAllProbe === undefined ? null : (answers.shift() ?? null);
  return { recipients: answers, catchAll, connections };
}

/** One group of recipients: host after host until each has an answer or no host is left. */
async function probeChunk(
  request: ProbeRequest,
  recipients: readonly ProbeRecipient[],
  options: Resolved,
  limits: ConnectionLimits,
  countConnection: () => void,
  signal: AbortSignal | undefined,
): Promise<ProbeAnswer[]> {
  const answers: Array<ProbeAnswer | undefined> = recipients.map(() => undefined);
  let last: ProbeAnswer = { class: 'no_connect', reply: null, host: null };
  // Addresses that took the connection and never greeted: another MX name for the same
  // address (mx1 and mx2 are often one machine) would only make us wait again.
  const silent = new Set<string>();
  for (const host of request.hosts.slice(0, options.maxHostsPerProbe)) {
    const open = answers.flatMap((answer, index) => (answer === undefined ? [index] : []));
    if (open.length === 0) break;
    const target = await pickAddress(host, options, signal);
    if (target === undefined) {
      last = { class: 'no_connect', reply: null, host };
      continue;
    }
    if (silent.has(target)) continue;
    const failure = await askHost(open, target, host);
    if (failure === undefined) continue;
    last = { class: failureClass(failure.class), reply: recorded(failure.reply), host };
    if (failure.class === 'timeout' && !failure.greeted) silent.add(target);
    if (!triesNextHost(failure.class, failure.greeted)) break;
  }
  return answers.map((answer) => answer ?? last);

  /**
   * Sessions at one host until its recipients are answered. A server that allows fewer
   * recipients per session than we ask about answers the rest "too many recipients": they
   * are asked again in a new session (RFC 5321 4.5.3.1.10) for as long as each one makes
   * progress, so a server that answers nothing else cannot keep us here. So are those of a
   * session the server ended (421, or a closed connection) after answering some: servers
   * that count recipients per connection end it at their limit, and the catch-all probe,
   * asked first, must not use up the one answer such a server gives. A 421 about us (a rate
   * limit on our IP) is not such a limit: the host is left alone.
   */
  async function askHost(
    open: number[],
    target: string,
    host: string,
  ): Promise<{ class: SessionFailure; reply: SmtpReply | null; greeted: boolean } | undefined> {
    for (let asking = open; asking.length > 0;) {
      const session = await sessionOnHost(
        asking.map((index) => recipients[index] as ProbeRecipient),
        target,
        host,
        options,
        limits,
        countConnection,
        signal,
      );
      const putOff: number[] = [];
      const unanswered: number[] = [];
      session.answers.forEach((answer, position) => {
        const index = asking[position] as number;
        if (answer === undefined) return void unanswered.push(index);
        answers[index] = { class: answer.class, reply: recorded(answer.reply), host };
        if (answer.class === 'too_many_recipients') putOff.push(index);
      });
      const left = [...putOff, ...unanswered];
      const progress = left.length < asking.length;
      if (session.failure !== undefined) {
        if (!(progress && endedByServer(session.failure) && !endedOnUs(session, options))) {
          return { class: session.failure, reply: session.failureReply, greeted: session.greeted };
        }
        for (const index of putOff) answers[index] = undefined;
      }
      asking = progress ? left : [];
    }
    return undefined;
  }
}

/**
 * One session at one address, under the connection limits. A failed TLS upgrade is retried
 * once in plain text, as opportunistic TLS does in MTAs (RFC 3207 4.1).
 */
async function sessionOnHost(
  recipients: readonly ProbeRecipient[],
  target: string,
  host: string,
  options: Resolved,
  limits: ConnectionLimits,
  countConnection: () => void,
  signal: AbortSignal | undefined,
  startTls = options.startTls,
): Promise<ProbeSession> {
  const session = new ProbeSession({
    heloName: options.heloName,
    mailFrom: options.mailFrom,
    recipients,
    startTls,
    recipientsPerTransaction: options.recipientsPerTransaction,
  });
  const release = await limits.acquire(target, signal);
  let releaseShared: (() => void) | undefined;
  try {
    releaseShared = await acquireShared(options.sharedHostSlots, target, signal);
    if (releaseShared === undefined) {
      // No shared slot could be had (its store is away): we may not know how busy the host
      // is, so we do not connect; every recipient is unknown, never a mailbox's answer.
      session.onError('no_connect');
    } else if (options.proxies === undefined) {
      await runSession(session, target, host, options, countConnection, signal);
    } else {
      // The target was checked by the policy already: the proxy is only asked for that IP.
      countConnection();
      const opened = await options.proxies.open(
        target,
        options.port,
        options.connectTimeoutMs,
        signal,
      );
      if (opened.kind === 'failed') {
        // The proxy's failure, never the mailbox's answer: unknown for every recipient.
        session.onError(opened.failure);
      } else {
        try {
          await runSession(session, target, host, options, () => {}, signal, opened.socket);
        } finally {
          opened.release();
        }
      }
    }
  } finally {
    releaseShared?.();
    release();
  }
  if (session.failure !== 'tls_failed' || !startTls) return session;
  return sessionOnHost(recipients, target, host, options, limits, countConnection, signal, false);
}

/**
 * RFC 5321 5.1: an unreachable host, a 421 or a 4xx greeting sends us to the next MX; so does
 * a host that took the connection and never greeted (a tarpit, or a host half down), as
 * MTAs treat a greeting timeout: the next MX may well answer.
 */
function triesNextHost(failure: SessionFailure, greeted: boolean): boolean {
  if (failure === 'timeout') return !greeted;
  return failure === 'try_next_mx' || failure === 'closed' || failure === 'no_connect';
}

/** A reply as the port records it: code, enhanced code and text, not the raw lines. */
function recorded(reply: SmtpReply | null): ProbeAnswer['reply'] {
  return reply === null ? null : { code: reply.code, enhanced: reply.enhanced, text: reply.text };
}

/** The server ended a session it had been answering: it may answer the rest in a new one. */
function endedByServer(failure: SessionFailure): boolean {
  return failure === 'try_next_mx' || failure === 'closed';
}

/** A 421 about us (a rate limit, our IP): the host is not asked again in a new session. */
function endedOnUs(session: ProbeSession, options: Resolved): boolean {
  const reply = session.failureReply;
  return (
    session.failure === 'try_next_mx' &&
    reply !== null &&
    endsOnUs(reply, { sender: options.mailFrom })
  );
}

function failureClass(failure: SessionFailure): ProbeClass {
  switch (failure) {
    case 'closed':
    case 'no_connect':
    case 'tls_failed':
      return 'no_connect';
    case 'timeout':
      return 'timeout';
    case 'try_next_mx':
      return 'temporary';
    case 'malformed_reply':
    case 'reply_too_large':
    case 'unsafe_command':
      return 'invalid';
    default:
      return failure;
  }
}

/** The first address of `host` we may connect to; resolved once, connected to as checked. */
async function pickAddress(
  host: string,
  options: Resolved,
  signal: AbortSignal | undefined,
): Promise<string | undefined> {
  const literal = literalAddress(host) ?? host;
  let addresses: readonly string[];
  if (isIP(literal) !== 0) {
    addresses = [literal];
  } else {
    try {
      addresses = await options.resolveHost(host, signal ?? new AbortController().signal);
    } catch {
      signal?.throwIfAborted();
      return undefined;
    }
  }
  return addresses.find((address) => options.allowPrivateNetworks || isPublicAddress(address));
}

/**
 * Drives one session over one connection until it ends, with a timer for each phase and
 * one for the whole session. Resolves once the socket is closed: none is ever left open.
 */
function runSession(
  session: ProbeSession,
  address: string,
  host: string,
  options: Resolved,
  countConnection: () => void,
  signal: AbortSignal | undefined,
  proxied?: Socket,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const reader = new ReplyReader(options.maxReplyBytes);
    let socket: Socket | TLSSocket = proxied ?? new Socket();
    let phaseTimer: NodeJS.Timeout | undefined;
    let finished = false;
    countConnection();

    const deadline = setTimeout(() => fail('timeout'), options.sessionDeadlineMs);
    const onAbort = () => finish(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });

    function arm(ms: number, failure: ConnectionFailure): void {
      clearTimeout(phaseTimer);
      phaseTimer = setTimeout(() => fail(failure), ms);
    }

    /**
     * Each command, and each reply of a pipelined group, gets a fresh deadline: a server that
     * answers MAIL FROM and then stalls is given up on after one command timeout, not after
     * the whole session's. After QUIT only a short wait for the 221 is left.
     */
    function armForReply(): void {
      if (session.quitting) arm(options.quitTimeoutMs, 'timeout');
      else arm(options.commandTimeoutMs, 'timeout');
    }

    function finish(abortReason?: unknown): void {
      if (finished) return;
      finished = true;
      clearTimeout(deadline);
      clearTimeout(phaseTimer);
      signal?.removeEventListener('abort', onAbort);
      socket.removeAllListeners('data');
      if (socket.destroyed) settle();
      else {
        socket.once('close', settle);
        socket.destroy();
      }
      function settle() {
        if (abortReason !== undefined) reject(abortReason as Error);
        else resolve();
      }
    }

    function fail(failure: ConnectionFailure): void {
      if (finished) return;
      session.onError(failure);
      finish();
    }

    function perform(actions: readonly SessionAction[]): void {
      for (const action of actions) {
        if (finished) return;
        switch (action.type) {
          case 'write':
            socket.write(action.data);
            armForReply();
            break;
          case 'start_tls':
            upgrade();
            break;
          case 'close':
            // QUIT, if any, was written just before: let it go out, then close.
            if (socket.writableLength > 0) socket.end(() => finish());
            else finish();
            clearTimeout(phaseTimer);
            return;
        }
      }
    }

    function onData(chunk: string | Buffer): void {
      const reading = socket;
      // Bytes that came with the proxy's CONNECT reply are handed over as a Buffer.
      const batch = reader.feed(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
      for (const reply of batch.replies) {
        if (finished || session.done) break;
        clearTimeout(phaseTimer);
        perform(session.onReply(reply));
        // RFC 3207 4.2: whatever followed the 220 to STARTTLS in plain text is discarded.
        if (socket !== reading) return;
        if (!finished && !session.done) armForReply();
      }
      if (batch.error !== undefined && !finished) {
        perform(session.onError(batch.error));
        finish();
      }
    }

    function upgrade(): void {
      clearTimeout(phaseTimer);
      const plain = socket;
      plain.removeAllListeners('data');
      reader.reset();
      const secure = tlsConnect({
        socket: plain,
        rejectUnauthorized: options.rejectUnauthorized,
        // SNI takes a host name, never an IP literal (RFC 6066 3).
        ...(isIP(host) === 0 ? { servername: host } : {}),
      });
      socket = secure;
      secure.setEncoding('utf8');
      // A handshake that stalls is a TLS failure like any other: retried in plain text.
      arm(options.commandTimeoutMs, 'tls_failed');
      let secured = false;
      secure.once('secureConnect', () => {
        secured = true;
        clearTimeout(phaseTimer);
        secure.on('data', onData);
        perform(session.onTlsReady());
      });
      secure.on('error', () => fail(secured ? 'closed' : 'tls_failed'));
      secure.on('close', () => fail(secured ? 'closed' : 'tls_failed'));
    }

    socket.setEncoding('utf8');
    socket.setNoDelay(true);
    socket.on('error', () => fail(socket.connecting ? 'no_connect' : 'closed'));
    socket.on('close', () => fail('closed'));
    socket.on('data', onData);
    if (proxied !== undefined) {
      arm(options.bannerTimeoutMs, 'timeout');
      return;
    }
    arm(options.connectTimeoutMs, 'no_connect');
    socket.connect({ host: address, port: options.port }, () => {
      arm(options.bannerTimeoutMs, 'timeout');
    });
  });
}
