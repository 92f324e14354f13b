import { readFileSync } from 'node:fs';
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
  '<relay@ip-law.example>',
  '"no such user"@x',
  'abuse@[203.0.113.9]',
  '<>',
  '@',
  '<',
  '"',
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

  it('never calls a policy code (X.7.x) a closed mailbox, nor a temporary one a missing mailbox', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(450, 451, 550, 552, 553, 554),
        fc.nat({ max: 999 }),
        text,
        (c, detail, t) => {
          const r = { code: c, enhanced: `${Math.floor(c / 100)}.7.${detail}`, text: t, lines: [] };
          expect(classifyRcpt(r)).not.toBe('disabled');
          if (c < 500) expect(classifyRcpt(r)).not.toBe('rejected');
        },
      ),
      fcParams(),
    );
  });

  it('never calls a policy code (X.7.x) a missing mailbox when its text says anything about us', () => {
    const plain = fc.string({ maxLength: 60 });
    fc.assert(
      fc.property(
        fc.constantFrom(550, 553, 554),
        // 5.7.504 "Recipient address rejected" is Microsoft's documented marker: left out.
        fc.nat({ max: 999 }).filter((detail) => detail !== 504),
        plain,
        fc.constantFrom('No such user!', 'User unknown', 'Recipient not found', 'no mailbox here'),
        fc.constantFrom(
          'Client host [203.0.113.9] blocked using zen.spamhaus.org',
          'Relay access denied',
          'rejected by policy',
          'Error: too many recipients from 2001:db8::25',
          'Sender address rejected',
          'Helo command rejected: Host not found',
          'your IP has a poor reputation',
        ),
        plain,
        (c, detail, before, missing, us, after) => {
          const r = {
            code: c,
            enhanced: `5.7.${detail}`,
            text: `${before} ${missing} ${us} ${after}`,
            lines: [],
          };
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

// ---------------------------------------------------------------------------------------------
// Echoes: a server repeats the address we sent, in its brackets or bare, quoted, upper-cased,
// or only its domain. Whatever the address is made of, the class must not change.
// ---------------------------------------------------------------------------------------------

interface CorpusEntry {
  readonly phase: string;
  readonly reply: readonly string[];
  readonly expected: ReplyClass;
}

const CORPUS: readonly CorpusEntry[] = JSON.parse(
  readFileSync(new URL('../fixtures/smtp-replies.json', import.meta.url), 'utf8'),
);

/** The words of every "about us" or other keyed rule, to build addresses from. */
const LOADED = [
  'client',
  'relay',
  'policy',
  'blocked',
  'spam',
  'spamhaus',
  'ip',
  'helo',
  'ehlo',
  'abuse',
  'denied',
  'banned',
  'reputation',
  'rbl',
  'spf',
  'dmarc',
  'ptr',
  'rate',
  'throttled',
  'sender',
  'return-path',
  'mail.from',
  'greylisted',
  'postgrey',
  'quota',
  'full',
  'disabled',
  'inactive',
  'unknown',
  'invalid',
  'hostname',
  'your',
  '192.0.2.1',
  'x#5.7.1',
];
const piece = fc.oneof(fc.constantFrom(...LOADED), fc.stringMatching(/^[a-z0-9]{1,6}$/));
const dotAtom = fc
  .tuple(fc.array(piece, { minLength: 1, maxLength: 3 }), fc.constantFrom('.', '-', '_', '+'))
  .map(([pieces, joiner]) => pieces.join(joiner));
/** Quoted local parts carry whole phrases: "user unknown"@..., "relay access denied"@... */
const quoted = fc
  .array(
    fc.constantFrom(
      ...LOADED,
      'user unknown',
      'no such user',
      'access denied',
      'too many recipients',
      'try again later',
      'over quota',
    ),
    { minLength: 1, maxLength: 3 },
  )
  .map((words) => `"${words.join(' ')}"`);
const label = fc
  .array(piece, { minLength: 1, maxLength: 2 })
  .map((pieces) => pieces.join('-').replace(/[^a-z0-9-]/g, 'x'));
const domain = fc
  .tuple(fc.array(label, { minLength: 1, maxLength: 2 }), fc.constantFrom('example', 'org', 'net'))
  .map(([labels, tld]) => `${labels.join('.')}.${tld}`);
const literal = fc.constantFrom('[192.0.2.1]', '[IPv6:2001:db8::25]');

/** One token a server echoes the recipient as, where the reply names an address. */
const IN_PLACE = [
  (a: string) => a,
  (a: string) => `<${a}>`,
  (a: string) => `(${a})`,
  (a: string) => `[${a}]`,
  (a: string) => `'${a}'`,
  (a: string) => `<${a}>...`,
  (a: string) => a.toUpperCase(),
  (_a: string, d: string) => d,
] as const;

/** What a server adds where its reply names no address: those tokens, or a phrase. */
const ADDED = [
  ...IN_PLACE,
  (a: string) => `RCPT TO:<${a}>`,
  (a: string, d: string) => `${a} for ${d}`,
  (_a: string, d: string) => `for ${d.toUpperCase()}.`,
] as const;

/** A recipient, and the text a server echoes it as: in place of an address, and added. */
const echoed = fc
  .tuple(
    fc.oneof(dotAtom, quoted),
    fc.oneof({ weight: 4, arbitrary: domain }, { weight: 1, arbitrary: literal }),
    fc.constantFrom(...IN_PLACE),
    fc.constantFrom(...ADDED),
  )
  .map(([local, host, inPlace, added]) => {
    const address = `${local}@${host}`;
    return { address, inPlace: inPlace(address, host), added: added(address, host) };
  });

/** The reply with its addresses echoing `address`, or the echo added when it names none. */
function echoing(reply: readonly string[], echo: { inPlace: string; added: string }): string[] {
  if (reply.some((line) => line.includes('@'))) {
    return reply.map((line) => substitute(line, echo.inPlace));
  }
  return reply.map((line, i) => (i === reply.length - 1 ? `${line} ${echo.added}` : line));
}

/** `line` with every address in it replaced by `echo`, its brackets and punctuation kept. */
function substitute(line: string, echo: string): string {
  return line
    .split(' ')
    .map((token) => {
      if (!token.includes('@')) return token;
      let start = 0;
      let end = token.length;
      while (start < end && '<([{\'"'.includes(token[start] as string)) start++;
      while (end > start && '>)]}\'",.;:!'.includes(token[end - 1] as string)) end--;
      return token.slice(0, start) + echo + token.slice(end);
    })
    .join(' ');
}

function parsed(lines: readonly string[]): SmtpReply {
  const reply = new ReplyReader().feed(lines.map((line) => `${line}\r\n`).join('')).replies[0];
  if (reply === undefined) throw new Error(`not a reply: ${lines.join(' / ')}`);
  return reply;
}

describe('echoed addresses', () => {
  const rcpt = CORPUS.filter((entry) => entry.phase === 'rcpt');

  it('never change the class of a corpus reply, whatever the recipient is made of', () => {
    fc.assert(
      fc.property(fc.constantFrom(...rcpt), echoed, (entry, echo) => {
        const lines = echoing(entry.reply, echo);
        const sent = { recipient: echo.address, sender: 'verify@example.net' };
        expect(classifyRcpt(parsed(lines), sent), lines.join('\n')).toBe(entry.expected);
      }),
      fcParams({ numRuns: 2000 }),
    );
  });

  it('never change the class of a reply to MAIL FROM either', () => {
    const session = CORPUS.filter((entry) => entry.phase === 'mail');
    fc.assert(
      fc.property(fc.constantFrom(...session), echoed, (entry, echo) => {
        const lines = echoing(entry.reply, echo);
        expect(classifySession(parsed(lines), { sender: echo.address }), lines.join('\n')).toBe(
          entry.expected,
        );
      }),
      fcParams(),
    );
  });
});
