import { describe, expect, it } from 'vitest';
import {
  encodeCommand,
  isSafeArgument,
  mailFrom,
  rcptTo,
  UnsafeCommandError,
} from '../../src/smtp/commands.js';

describe('SMTP command writer', () => {
  it('terminates a command with CRLF', () => {
    expect(rcptTo('ann@example.org')).toBe('RCPT TO:<ann@example.org>\r\n');
    expect(mailFrom('', false)).toBe('MAIL FROM:<>\r\n');
    expect(mailFrom('v@example.net', true)).toBe('MAIL FROM:<v@example.net> SMTPUTF8\r\n');
  });

  it.each(['a\r\nDATA', 'a\nQUIT', 'a\rb', 'a\0b'])('refuses %j', (text) => {
    expect(() => encodeCommand(`RCPT TO:<${text}>`)).toThrow(UnsafeCommandError);
    expect(() => rcptTo(text)).toThrow(UnsafeCommandError);
  });

  it('tells safe arguments from ones with control characters', () => {
    expect(isSafeArgument('probe.example.net')).toBe(true);
    expect(isSafeArgument('probe\texample')).toBe(false);
    expect(isSafeArgument('x\u007f')).toBe(false);
  });
});
