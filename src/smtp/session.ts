import { classifyRcpt, classifySession } from './classify.js';
import {
  ehlo,
  helo,
  mailFrom,
  QUIT,
  rcptTo,
  RSET,
  STARTTLS,
  UnsafeCommandError,
} from './commands.js';
import { ehloExtensions, type ReplyError, type SmtpReply } from './reply.js';
import type { ProbeRecipient, ReplyClass } from '../ports/smtp.js';

/** Everything one session does, decided before it starts. */
export interface SessionPlan {
  readonly heloName: string;
  /** The envelope sender; '' for the null sender `<>`. */
  readonly mailFrom: string;
  readonly recipients: readonly ProbeRecipient[];
  /** Upgrade with STARTTLS when the server offers it (opportunistic, RFC 3207). */
  readonly startTls: boolean;
  /** RCPTs per transaction (MAIL FROM ... RSET); RFC 5321 4.5.3.1.8 promises 100. */
  readonly recipientsPerTransaction: number;
}

/** What the socket adapter must do next. The session never touches a socket itself. */
export type SessionAction =
  | { readonly type: 'write'; readonly data: string }
  | { readonly type: 'start_tls' }
  | { readonly type: 'close' };

/** The answer for one recipient, or why it has none. */
export interface RecipientAnswer {
  readonly class: ReplyClass | 'smtputf8_unsupported';
  readonly reply: SmtpReply | null;
}

/** Why a session ended before answering every recipient. */
export type SessionFailure = ReplyClass | ReplyError | ConnectionFailure | 'unsafe_command';

/** What the adapter reports about the connection itself. */
export type ConnectionFailure = 'no_connect' | 'timeout' | 'closed' | 'tls_failed';

type Phase =
  | 'banner'
  | 'ehlo'
  | 'helo'
  | 'starttls'
  | 'tls_handshake'
  | 'ehlo_tls'
  | 'transaction'
  | 'quit'
  | 'done';

type Expected =
  | { readonly kind: 'mail' }
  | { readonly kind: 'rcpt'; readonly index: number }
  | { readonly kind: 'rset' };

const WRITE = (data: string): SessionAction => ({ type: 'write', data });
const CLOSE: SessionAction = { type: 'close' };
const NOTHING: readonly SessionAction[] = [];

/**
 * The SMTP probe dialogue as a pure state machine (no I/O, no timers): the adapter feeds it
 * replies and events and carries out the actions it returns. Banner -> EHLO (HELO fallback)
 * -> STARTTLS when offered -> EHLO -> MAIL FROM -> RCPT TO for each recipient, RSET between
 * transactions -> QUIT. Never DATA: nothing is ever delivered. With PIPELINING (RFC 2920)
 * a whole transaction goes out in one write, one round trip instead of one per recipient.
 * A server that takes fewer recipients per transaction than we send (X.5.3, RFC 5321
 * 4.5.3.1.10) gets the rest in further transactions of at most as many as it took; a limit
 * on our client ("too many recipients from <our IP>") is policy to the classifier, an answer
 * that is never asked again.
 *
 * Never throws for anything a server sends; a reply stream that makes no sense ends the
 * session with `failure` set.
 */
export class ProbeSession {
  readonly #plan: SessionPlan;
  readonly #answers: Array<RecipientAnswer | undefined>;
  #phase: Phase = 'banner';
  #pending: Expected[] = [];
  #outbox: Expected[] = [];
  #extensions: ReadonlySet<string> = new Set();
  #next = 0;
  /** Recipients a server put off with "too many recipients": asked first in the next transaction. */
  #deferred: number[] = [];
  #perTransaction: number;
  /** Recipients of the current transaction answered (anything but "too many"). */
  #answeredInTransaction = 0;
  #failure: SessionFailure | undefined;
  #failureReply: SmtpReply | null = null;
  #mailRefused = false;
  #tls = false;
  #greeted = false;

  constructor(plan: SessionPlan) {
    this.#plan = plan;
    this.#answers = plan.recipients.map(() => undefined);
    this.#perTransaction = Math.max(1, plan.recipientsPerTransaction);
  }

  /** One entry per recipient, undefined where the session ended before an answer. */
  get answers(): ReadonlyArray<RecipientAnswer | undefined> {
    return this.#answers;
  }

  /** Why recipients were left unanswered, if they were. */
  get failure(): SessionFailure | undefined {
    return this.#failure;
  }

  /** The reply that caused `failure`, when a reply did. */
  get failureReply(): SmtpReply | null {
    return this.#failureReply;
  }

  get done(): boolean {
    return this.#phase === 'done';
  }

  /** QUIT was sent: only its 221 is awaited, briefly, and nothing it says changes an answer. */
  get quitting(): boolean {
    return this.#phase === 'quit';
  }

  /** Whether the server greeted at all (any reply to the connection): a tarpit never does. */
  get greeted(): boolean {
    return this.#greeted;
  }

  /** Whether the dialogue runs over TLS. */
  get tls(): boolean {
    return this.#tls;
  }

  /** The extensions of the last EHLO reply (PIPELINING, STARTTLS, SMTPUTF8, ...). */
  get extensions(): ReadonlySet<string> {
    return this.#extensions;
  }

  onReply(reply: SmtpReply): readonly SessionAction[] {
    try {
      return this.#onReply(reply);
    } catch (error) {
      // Only encodeCommand throws, for a recipient or name carrying CR/LF/NUL: end cleanly.
      if (!(error instanceof UnsafeCommandError)) throw error;
      return this.#fail('unsafe_command', null, [CLOSE]);
    }
  }

  /** The TLS handshake after STARTTLS succeeded: greet again (RFC 3207 4.2). */
  onTlsReady(): readonly SessionAction[] {
    if (this.#phase !== 'tls_handshake') return NOTHING;
    this.#tls = true;
    this.#phase = 'ehlo_tls';
    return [WRITE(ehlo(this.#plan.heloName))];
  }

  /**
   * The connection failed (never made, timed out, reset, a bad TLS handshake) or the stream
   * stopped being SMTP. Ignored once the session is done.
   */
  onError(failure: ConnectionFailure | ReplyError): readonly SessionAction[] {
    if (this.#phase === 'done') return NOTHING;
    // After QUIT a silent or closed connection is the end we asked for, not a failure.
    if (this.#phase === 'quit') {
      this.#phase = 'done';
      return [CLOSE];
    }
    return this.#fail(failure, null, [CLOSE]);
  }

  #onReply(reply: SmtpReply): readonly SessionAction[] {
    if (this.#phase !== 'done') this.#greeted = true;
    switch (this.#phase) {
      case 'banner':
        if (reply.code === 220) return this.#greet();
        // A 4xx greeting means "not now, here": RFC 5321 5.1 says try the next MX.
        if (reply.code >= 400 && reply.code < 500) return this.#fail('try_next_mx', reply, [CLOSE]);
        return this.#failWith(reply);
      case 'ehlo':
        if (reply.code === 250) return this.#afterEhlo(reply);
        // RFC 5321 4.1.4: a server that does not know EHLO answers 500/502; try HELO.
        if (reply.code >= 500 && reply.code <= 504) {
          this.#phase = 'helo';
          return [WRITE(helo(this.#plan.heloName))];
        }
        return this.#failWith(reply);
      case 'helo':
        if (reply.code === 250) return this.#beginTransactions();
        return this.#failWith(reply);
      case 'starttls':
        if (reply.code === 220) {
          this.#phase = 'tls_handshake';
          return [{ type: 'start_tls' }];
        }
        // 454 TLS not available: go on in plain text, as opportunistic TLS does.
        if (reply.code === 421) return this.#failWith(reply);
        return this.#beginTransactions();
      case 'ehlo_tls':
        if (reply.code === 250) {
          this.#extensions = ehloExtensions(reply);
          return this.#beginTransactions();
        }
        return this.#failWith(reply);
      case 'transaction':
        return this.#onTransactionReply(reply);
      case 'quit':
        this.#phase = 'done';
        return [CLOSE];
      case 'done':
        return NOTHING;
      case 'tls_handshake':
        // Nothing is expected: the server talks out of turn.
        return this.#fail('invalid', reply, [CLOSE]);
    }
  }

  #greet(): readonly SessionAction[] {
    this.#phase = 'ehlo';
    return [WRITE(ehlo(this.#plan.heloName))];
  }

  #afterEhlo(reply: SmtpReply): readonly SessionAction[] {
    this.#extensions = ehloExtensions(reply);
    if (this.#plan.startTls && this.#extensions.has('STARTTLS')) {
      this.#phase = 'starttls';
      return [WRITE(STARTTLS)];
    }
    return this.#beginTransactions();
  }

  #beginTransactions(): readonly SessionAction[] {
    this.#phase = 'transaction';
    return this.#nextTransaction(false);
  }

  /** Queues RSET (between transactions), MAIL FROM and the next group's RCPTs. */
  #nextTransaction(reset: boolean): readonly SessionAction[] {
    const { recipients } = this.#plan;
    const offersUtf8 = this.#extensions.has('SMTPUTF8');
    const group: number[] = [];
    while (group.length < this.#perTransaction) {
      const index = this.#deferred.shift() ?? this.#next++;
      if (index >= recipients.length) break;
      // RFC 6531 3.4: without the extension a UTF-8 address may not be sent at all.
      if ((recipients[index] as ProbeRecipient).smtpUtf8 && !offersUtf8) {
        this.#answers[index] = { class: 'smtputf8_unsupported', reply: null };
      } else {
        group.push(index);
      }
    }
    if (group.length === 0) return this.#quit();
    this.#mailRefused = false;
    this.#answeredInTransaction = 0;
    if (reset) this.#outbox.push({ kind: 'rset' });
    this.#outbox.push({ kind: 'mail' });
    for (const index of group) this.#outbox.push({ kind: 'rcpt', index });
    return this.#flush();
  }

  /** Sends queued commands: all at once with PIPELINING, else one per reply. */
  #flush(): readonly SessionAction[] {
    const pipelining = this.#extensions.has('PIPELINING');
    let data = '';
    while (this.#outbox.length > 0 && (pipelining || this.#pending.length === 0)) {
      const expected = this.#outbox.shift() as Expected;
      data += this.#encode(expected);
      this.#pending.push(expected);
    }
    return data === '' ? NOTHING : [WRITE(data)];
  }

  #encode(expected: Expected): string {
    switch (expected.kind) {
      case 'rset':
        return RSET;
      case 'mail': {
        const needsUtf8 = this.#outbox.some(
          (next) =>
            next.kind === 'rcpt' && (this.#plan.recipients[next.index] as ProbeRecipient).smtpUtf8,
        );
        return mailFrom(this.#plan.mailFrom, needsUtf8);
      }
      case 'rcpt':
        return rcptTo((this.#plan.recipients[expected.index] as ProbeRecipient).address);
    }
  }

  #onTransactionReply(reply: SmtpReply): readonly SessionAction[] {
    const expected = this.#pending.shift();
    if (expected === undefined) return this.#fail('invalid', reply, [CLOSE]);
    if (reply.code === 421) return this.#fail('try_next_mx', reply, [CLOSE]);
    switch (expected.kind) {
      case 'rset':
        if (reply.code !== 250) return this.#failWith(reply);
        break;
      case 'mail':
        if (reply.code !== 250) {
          // Our sender is refused: the pipelined RCPTs will fail for that reason, not theirs.
          this.#mailRefused = true;
          this.#outbox = [];
          this.#failure = classifySession(reply, { sender: this.#plan.mailFrom });
          this.#failureReply = reply;
        }
        break;
      case 'rcpt':
        if (!this.#mailRefused) this.#onRcptReply(expected.index, reply);
        break;
    }
    if (this.#pending.length > 0 || this.#outbox.length > 0) return this.#flush();
    if (this.#mailRefused) return this.#quit();
    return this.#nextTransaction(true);
  }

  /**
   * "Too many recipients" is not an answer: the recipient is asked again in the next
   * transaction, which holds no more recipients than this one took. A transaction whose
   * first recipient is put off makes no progress: its recipients keep that answer (unknown)
   * and the caller may ask them in a new session.
   */
  #onRcptReply(index: number, reply: SmtpReply): void {
    const recipient = (this.#plan.recipients[index] as ProbeRecipient).address;
    // The server may echo the recipient or our sender: only its own words are read.
    const klass = classifyRcpt(reply, { recipient, sender: this.#plan.mailFrom });
    if (klass !== 'too_many_recipients') {
      this.#answeredInTransaction++;
      this.#answers[index] = { class: klass, reply };
      return;
    }
    if (this.#answeredInTransaction === 0) {
      const unasked = [...this.#deferred.splice(0), index];
      while (this.#next < this.#plan.recipients.length) unasked.push(this.#next++);
      for (const put of unasked) this.#answers[put] = { class: klass, reply };
      return;
    }
    this.#perTransaction = Math.min(this.#perTransaction, this.#answeredInTransaction);
    this.#deferred.push(index);
  }

  /** Every recipient has its answer: say goodbye, and wait (briefly) for the 221. */
  #quit(): readonly SessionAction[] {
    this.#phase = 'quit';
    this.#pending = [];
    this.#outbox = [];
    return [WRITE(QUIT)];
  }

  /** A refusal outside MAIL FROM (banner, EHLO, STARTTLS, RSET) ends the session. */
  #failWith(reply: SmtpReply): readonly SessionAction[] {
    const read =
      reply.code >= 200 && reply.code < 400
        ? 'invalid'
        : classifySession(reply, { sender: this.#plan.mailFrom });
    // Only MAIL FROM names our sender: elsewhere a plain refusal is just that.
    const klass = read === 'sender_refused' ? 'refused' : read;
    // 421 means the server is closing anyway, and one talking nonsense gets no QUIT.
    if (klass === 'try_next_mx' || klass === 'invalid') return this.#fail(klass, reply, [CLOSE]);
    // Be polite where the server still listens: QUIT, and wait for its 221.
    this.#fail(klass, reply, NOTHING);
    return this.#quit();
  }

  #fail(
    failure: SessionFailure,
    reply: SmtpReply | null,
    actions: readonly SessionAction[],
  ): readonly SessionAction[] {
    this.#failure ??= failure;
    this.#failureReply ??= reply;
    this.#phase = 'done';
    this.#pending = [];
    this.#outbox = [];
    return actions;
  }
}
