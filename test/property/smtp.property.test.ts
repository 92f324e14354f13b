import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeCommand, mailFrom, rcptTo, UnsafeCommandError } from '../../src/smtp/commands.js';
import { ReplyReader } from '../../src/smtp/reply.js';
import { ProbeSession } from '../../src/smtp/session.js';
import { fcParams } from '../helpers/fast-check.js';

const code = fc.constantFrom(
  220,
  221,
  250,
  251,
  252,
  354,
  421,
  450,
  451,
  452,
  454,
  500,
  502,
  550,
  552,
  553,
  554,
);
const text = fc.oneof(
  fc.constantFrom('ok', 'PIPELINING', 'STARTTLS', 'SMTPUTF8', '5.1.1 user unknown', 'spamhaus', ''),
  fc.string({ maxLength: 20 }),
);
const line = fc.oneof(
  fc.tuple(code, fc.constantFrom(' ', '-'), text).map(([c, sep, t]) => `${c}${sep}${t}\r\n`),
  fc.string({ unit: 'binary', maxLength: 40 }),
);
const stream = fc.array(line, { maxLength: 40 });
const recipients = fc.array(
  fc.record({ address: fc.string({ maxLength: 30 }), smtpUtf8: fc.boolean() }),
  { minLength: 1, maxLength: 6 },
);

describe('SMTP session properties', () => {
  it('never throws and always ends for any stream of replies, cut anywhere', () => {
    fc.assert(
      fc.property(
        stream,
        recipients,
        fc.integer({ min: 1, max: 7 }),
        fc.array(fc.integer({ min: 1, max: 50 })),
        (lines, people, perTransaction, cuts) => {
          const session = new ProbeSession({
            heloName: 'probe.example.net',
            mailFrom: 'v@example.net',
            recipients: people,
            startTls: true,
            recipientsPerTransaction: perTransaction,
          });
          const reader = new ReplyReader(512);
          let data = lines.join('');
          let writes = 0;
          // Cut the stream into chunks of arbitrary sizes, as TCP does.
          for (const cut of [...cuts, data.length]) {
            const batch = reader.feed(data.slice(0, cut));
            data = data.slice(cut);
            for (const reply of batch.replies) {
              for (const action of session.onReply(reply)) {
                if (action.type === 'write') {
                  writes++;
                  // Every write is whole commands, each ending in its one CRLF.
                  expect(action.data.endsWith('\r\n')).toBe(true);
                  expect(action.data.slice(0, -2).split('\r\n').join('')).not.toMatch(/[\r\n\0]/);
                }
                if (action.type === 'start_tls') session.onTlsReady();
              }
            }
            if (batch.error !== undefined) session.onError(batch.error);
            if (data === '') break;
          }
          // However the server behaved, the adapter can always end the session.
          session.onError('closed');
          expect(session.done).toBe(true);
          expect(session.answers).toHaveLength(people.length);
          // A session can never ask more questions than it has recipients and steps.
          expect(writes).toBeLessThanOrEqual(lines.length + 1);
        },
      ),
      fcParams(),
    );
  });

  it('the command writer never lets CR, LF or NUL into a command', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 60 }), fc.boolean(), (input, utf8) => {
        for (const build of [
          () => rcptTo(input),
          () => mailFrom(input, utf8),
          () => encodeCommand(input),
        ]) {
          let written: string;
          try {
            written = build();
          } catch (error) {
            expect(error).toBeInstanceOf(UnsafeCommandError);
            expect(input).toMatch(/[\r\n\0]/);
            continue;
          }
          expect(written.endsWith('\r\n')).toBe(true);
          expect(written.slice(0, -2)).not.toMatch(/[\r\n\0]/);
        }
      }),
      fcParams(),
    );
  });
});
