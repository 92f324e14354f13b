/**
 * The only way a command reaches the wire. RFC 5321 2.3.8: CR and LF end a command, so a
 * CR, LF or NUL inside one would let an address or a configured name smuggle a second
 * command (SMTP injection). Every command is checked here, whatever built it.
 */
export class UnsafeCommandError extends Error {
  constructor(command: string) {
    super(`refusing to send an SMTP command with CR, LF or NUL inside: ${JSON.stringify(command)}`);
    this.name = 'UnsafeCommandError';
  }
}

const UNSAFE = /[\0\n\r]/;

/** `text` with its CRLF terminator; throws UnsafeCommandError if `text` holds CR, LF or NUL. */
export function encodeCommand(text: string): string {
  if (UNSAFE.test(text)) throw new UnsafeCommandError(text);
  return `${text}\r\n`;
}

/** True when `value` may appear inside a command: no CR, LF or NUL, no other control codes. */
export function isSafeArgument(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return false;
  }
  return true;
}

/**
 * Whether a HELO name or MAIL FROM address can go on the wire as one argument: no control
 * characters (CR and LF above all), no space and no `>`.
 */
export function isSmtpIdentity(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    isSafeArgument(value) &&
    !value.includes(' ') &&
    !value.includes('>')
  );
}

/** Refuses a configured HELO name or MAIL FROM address that isSmtpIdentity refuses. */
export function assertSmtpIdentity(option: 'heloName' | 'mailFrom', value: unknown): void {
  if (!isSmtpIdentity(value)) {
    throw new TypeError(`smtp ${option} must be a plain name without spaces or control characters`);
  }
}

export const ehlo = (name: string): string => encodeCommand(`EHLO ${name}`);
export const helo = (name: string): string => encodeCommand(`HELO ${name}`);
export const STARTTLS = encodeCommand('STARTTLS');
export const RSET = encodeCommand('RSET');
export const QUIT = encodeCommand('QUIT');

/** RFC 6531 3.4: the SMTPUTF8 parameter goes on MAIL FROM when a recipient needs it. */
export function mailFrom(address: string, smtpUtf8: boolean): string {
  return encodeCommand(`MAIL FROM:<${address}>${smtpUtf8 ? ' SMTPUTF8' : ''}`);
}

export function rcptTo(address: string): string {
  return encodeCommand(`RCPT TO:<${address}>`);
}
