/** One SMTP reply (RFC 5321 4.2): a code, lines of text, and RFC 3463's enhanced code if sent. */
export interface SmtpReply {
  readonly code: number;
  /** `5.1.1` and the like (RFC 2034 ENHANCEDSTATUSCODES), from the first line; null if absent. */
  readonly enhanced: string | null;
  /** The text of every line, the code and enhanced code removed, joined by a space. */
  readonly text: string;
  /** Each line's text as sent, without the code: EHLO lists one extension a line. */
  readonly lines: readonly string[];
}

/** RFC 5321 4.5.3.1.5 allows 512 octets a reply line; we allow far more before giving up. */
export const MAX_REPLY_BYTES = 64 * 1024;

/** Why a byte stream is not SMTP: both end the session as `invalid`. */
export type ReplyError = 'malformed_reply' | 'reply_too_large';

export interface ReplyBatch {
  readonly replies: readonly SmtpReply[];
  /** Set once the stream stops making sense; everything after it is ignored. */
  readonly error?: ReplyError;
}

const ENHANCED_CODE = /^([245])\.(\d{1,3})\.(\d{1,3})(?: |$)/;

/**
 * Reads replies out of a byte stream, chunk by chunk, in linear time and bounded memory: a
 * reply (its lines together) larger than `maxBytes` is an error, never a growing buffer, so a
 * server sending 20,000 continuation lines costs us 64 KiB at most.
 */
export class ReplyReader {
  readonly #maxBytes: number;
  #partial = '';
  #code = 0;
  #lines: string[] = [];
  #replyBytes = 0;
  #error: ReplyError | undefined;

  constructor(maxBytes = MAX_REPLY_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /** Feeds text decoded as latin1 (one char per byte) or UTF-8; returns the complete replies. */
  feed(chunk: string): ReplyBatch {
    if (this.#error !== undefined) return { replies: [], error: this.#error };
    const replies: SmtpReply[] = [];
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf('\n', start);
      if (newline < 0) break;
      const line = this.#partial + chunk.slice(start, newline);
      this.#partial = '';
      start = newline + 1;
      const reply = this.#line(line.endsWith('\r') ? line.slice(0, -1) : line);
      if (this.#error !== undefined) return { replies, error: this.#error };
      if (reply !== undefined) replies.push(reply);
    }
    this.#partial += chunk.slice(start);
    if (this.#partial.length + this.#replyBytes > this.#maxBytes) this.#error = 'reply_too_large';
    return this.#error === undefined ? { replies } : { replies, error: this.#error };
  }

  /** Forgets buffered text: RFC 3207 4.2, nothing read before the TLS handshake counts after. */
  reset(): void {
    this.#partial = '';
    this.#code = 0;
    this.#lines = [];
    this.#replyBytes = 0;
  }

  #line(line: string): SmtpReply | undefined {
    this.#replyBytes += line.length + 2;
    if (this.#replyBytes > this.#maxBytes) {
      this.#error = 'reply_too_large';
      return undefined;
    }
    const code = replyCode(line);
    const separator = line.charCodeAt(3);
    // "250-" continues, "250 " or a bare "250" ends; all lines of one reply share the code.
    if (code === undefined || (line.length > 3 && separator !== 0x20 && separator !== 0x2d)) {
      this.#error = 'malformed_reply';
      return undefined;
    }
    if (this.#code !== 0 && code !== this.#code) {
      this.#error = 'malformed_reply';
      return undefined;
    }
    this.#code = code;
    this.#lines.push(line.slice(4));
    if (separator === 0x2d) return undefined;
    const reply = toReply(code, this.#lines);
    this.#code = 0;
    this.#lines = [];
    this.#replyBytes = 0;
    return reply;
  }
}

function replyCode(line: string): number | undefined {
  if (line.length < 3) return undefined;
  const a = line.charCodeAt(0) - 0x30;
  const b = line.charCodeAt(1) - 0x30;
  const c = line.charCodeAt(2) - 0x30;
  // RFC 5321 4.2: the first digit is 2-5, the second 0-5, the third 0-9.
  if (a < 2 || a > 5 || b < 0 || b > 5 || c < 0 || c > 9) return undefined;
  return a * 100 + b * 10 + c;
}

function toReply(code: number, lines: readonly string[]): SmtpReply {
  const first = lines[0] ?? '';
  const match = ENHANCED_CODE.exec(first);
  // RFC 3463: the enhanced code's class must agree with the reply's first digit.
  const enhanced = match !== null && Number(match[1]) === Math.floor(code / 100) ? match : null;
  const texts = lines.map((line) => (enhanced === null ? line : stripEnhanced(line)).trim());
  return {
    code,
    enhanced: enhanced === null ? null : `${enhanced[1]}.${enhanced[2]}.${enhanced[3]}`,
    text: texts.filter((text) => text !== '').join(' '),
    lines,
  };
}

function stripEnhanced(line: string): string {
  const match = ENHANCED_CODE.exec(line);
  return match === null ? line : line.slice(match[0].length);
}

/**
 * The EHLO keywords a server offers (RFC 5321 4.1.1.1), upper-cased: PIPELINING, STARTTLS,
 * SMTPUTF8... The first line is the greeting; each further line starts with one keyword.
 */
export function ehloExtensions(reply: SmtpReply): ReadonlySet<string> {
  const keywords = new Set<string>();
  for (let i = 1; i < reply.lines.length; i++) {
    const keyword = (reply.lines[i] as string).trim().split(' ', 1)[0]?.toUpperCase();
    if (keyword) keywords.add(keyword);
  }
  return keywords;
}
