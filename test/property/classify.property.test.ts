import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyRcpt, classifySession, type ReplyClass } from '../../src/smtp/classify.js';
import { MAX_REPLY_BYTES, ReplyReader, type SmtpReply } from '../../src/smtp/reply.js';
import { fcParams } from '../helpers/fast-check.js';

const CLASSES: ReadonlySet<ReplyClass> = new Set<ReplyClass>([
  'accepted',
  'rejected',
  'disabled',
  'mailbox_full',
  'greylisted',
  'cannot_verify',
  'blocked',
  'sender_refused',
  'too_many_recipients',
  'try_next_mx',
  'temporary',
  'refused',
  'invalid',
]);

// Texts of any encoding and size, with the words the rules look for mixed in.
const words = fc.constantFrom(
  'user unknown',
  'spamhaus',
  'Sender address rejected',
  'greylisted',
  'try again later',
  'over quota',
  'disabled',
  '(#5.1.1)',
  '#4.7.1',
  '5.2.1',
  'rate',
  '203.0.113.9',
  ' ',
);
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ unit: 'grapheme', maxLength: 200 }),
  fc
    .array(fc.oneof(words, fc.string({ maxLength: 8 })), { maxLength: 40 })
    .map((parts) => parts.join(' ')),
  fc.nat({ max: MAX_REPLY_BYTES }).map((size) => 'a'.repeat(size)),
);
const code = fc.oneof(
  fc.integer({ min: 200, max: 599 }),
  fc.constantFrom(0, -1, 99, 600, 999, 1e9, Number.NaN, Number.POSITIVE_INFINITY, 550.5),
);
const enhanced = fc.oneof(
  fc.constant(null),
  fc
    .tuple(fc.constantFrom(2, 4, 5), fc.nat({ max: 999 }), fc.nat({ max: 999 }))
    .map(([a, b, c]) => `${a}.${b}.${c}`),
  fc.string({ maxLength: 12 }),
);
const reply: fc.Arbitrary<SmtpReply> = fc.record({
  code,
  enhanced,
  text,
  lines: fc.constant([]),
});

describe('reply classification properties', () => {
  it('classifies any reply, of any size, code or encoding, without throwing', () => {
    fc.assert(
      fc.property(reply, (r) => {
        expect(CLASSES.has(classifyRcpt(r))).toBe(true);
        expect(CLASSES.has(classifySession(r))).toBe(true);
      }),
      fcParams(),
    );
  });

  it('classifies whatever the reader makes of any byte stream', () => {
    const chunk = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 80 }),
      fc
        .tuple(fc.integer({ min: 200, max: 599 }), fc.constantFrom(' ', '-'), text)
        .map(([c, sep, t]) => `${c}${sep}${t.slice(0, 300)}\r\n`),
    );
    fc.assert(
      fc.property(fc.array(chunk, { maxLength: 20 }), (chunks) => {
        const reader = new ReplyReader();
        for (const piece of chunks) {
          for (const r of reader.feed(piece).replies) {
            expect(CLASSES.has(classifyRcpt(r))).toBe(true);
            expect(CLASSES.has(classifySession(r))).toBe(true);
          }
        }
      }),
      fcParams(),
    );
  });

  it('never reads a mailbox verdict into a reply to the banner, EHLO, MAIL FROM or RSET', () => {
    fc.assert(
      fc.property(reply, (r) => {
        expect(['accepted', 'rejected', 'disabled', 'mailbox_full', 'cannot_verify']).not.toContain(
          classifySession(r),
        );
      }),
      fcParams(),
    );
  });

  it('never calls a policy code (X.7.x) a missing or closed mailbox, whatever the text', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(450, 451, 550, 552, 553, 554),
        fc.nat({ max: 999 }),
        text,
        (c, detail, t) => {
          const r = { code: c, enhanced: `${Math.floor(c / 100)}.7.${detail}`, text: t, lines: [] };
          expect(['rejected', 'disabled']).not.toContain(classifyRcpt(r));
        },
      ),
      fcParams(),
    );
  });

  it('never calls a reply naming an RBL or our IP a missing mailbox when no code says so', () => {
    const plain = fc.string({ maxLength: 60 }).filter((s) => !/#|^\s*\d/.test(s));
    fc.assert(
      fc.property(
        fc.constantFrom(550, 551, 553, 554),
        plain,
        fc.constantFrom(
          'blocked using zen.spamhaus.org',
          'Client host [203.0.113.9] rejected',
          'listed at bl.spamcop.net: spam source',
        ),
        plain,
        (c, before, us, after) => {
          const r = {
            code: c,
            enhanced: null,
            text: `${before} user unknown ${us} ${after}`,
            lines: [],
          };
          expect(['rejected', 'disabled']).not.toContain(classifyRcpt(r));
        },
      ),
      fcParams(),
    );
  });
});
