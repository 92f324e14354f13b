import { describe, expect, it } from 'vitest';
import { ehloExtensions, ReplyReader } from '../../src/smtp/reply.js';

describe('ReplyReader', () => {
  it('reads a one-line reply with an enhanced status code', () => {
    const { replies } = new ReplyReader().feed('550 5.1.1 <bob@example.org>: User unknown\r\n');
    expect(replies).toEqual([
      {
        code: 550,
        enhanced: '5.1.1',
        text: '<bob@example.org>: User unknown',
        lines: ['5.1.1 <bob@example.org>: User unknown'],
      },
    ]);
  });

  it('joins multi-line replies and strips the enhanced code from every line', () => {
    const { replies } = new ReplyReader().feed(
      '550-5.7.1 Our system has detected\r\n550-5.7.1 an unusual rate\r\n550 5.7.1 of mail.\r\n',
    );
    expect(replies).toHaveLength(1);
    expect(replies[0]?.enhanced).toBe('5.7.1');
    expect(replies[0]?.text).toBe('Our system has detected an unusual rate of mail.');
  });

  it('assembles replies split across chunks at any byte, and reads bare LF endings', () => {
    const stream = '220 mx.example.org ESMTP\r\n250-mx\r\n250-PIPELINING\n250 SMTPUTF8\r\n';
    for (let cut = 1; cut < stream.length; cut++) {
      const reader = new ReplyReader();
      const replies = [
        ...reader.feed(stream.slice(0, cut)).replies,
        ...reader.feed(stream.slice(cut)).replies,
      ];
      expect(replies.map((reply) => reply.code)).toEqual([220, 250]);
      expect([...ehloExtensions(replies[1]!)]).toEqual(['PIPELINING', 'SMTPUTF8']);
    }
  });

  it('accepts a bare code as a final line and ignores an enhanced code of the wrong class', () => {
    const { replies } = new ReplyReader().feed('250\r\n451 5.1.1 odd\r\n');
    expect(replies.map((r) => [r.code, r.enhanced, r.text])).toEqual([
      [250, null, ''],
      [451, null, '5.1.1 odd'],
    ]);
  });

  it.each([
    ['not SMTP', 'HTTP/1.1 400 Bad Request\r\n'],
    ['a code out of range', '199 hello\r\n'],
    ['a bad separator', '250+hello\r\n'],
    ['mixed codes in one reply', '250-first\r\n550 second\r\n'],
  ])('refuses %s', (_name, stream) => {
    const reader = new ReplyReader();
    expect(reader.feed(stream).error).toBe('malformed_reply');
    // and stays refused
    expect(reader.feed('250 ok\r\n')).toEqual({ replies: [], error: 'malformed_reply' });
  });

  it('gives up on a reply larger than its cap instead of buffering it', () => {
    const reader = new ReplyReader(1024);
    let result = reader.feed('250-x\r\n');
    for (let i = 0; i < 20_000 && result.error === undefined; i++)
      result = reader.feed('250-x\r\n');
    expect(result.error).toBe('reply_too_large');
    expect(new ReplyReader(1024).feed('2'.repeat(2000)).error).toBe('reply_too_large');
  });

  it('forgets buffered text on reset (RFC 3207: nothing before TLS counts after)', () => {
    const reader = new ReplyReader();
    reader.feed('250-injected\r\n250 PIPELI');
    reader.reset();
    expect(reader.feed('220 ready\r\n').replies.map((r) => r.code)).toEqual([220]);
  });
});
