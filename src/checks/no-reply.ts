import { DEFAULT_NO_REPLY_NAMES } from '../data/lists.js';
import { pass, risky, type Checker } from './checker.js';
import { mailboxName } from './local-name.js';

/** Removes the separators people put inside no-reply names: no-reply, no_reply, no.reply. */
function withoutSeparators(name: string): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const code = name.charCodeAt(i);
    if (code !== 0x2d && code !== 0x5f && code !== 0x2e) out += name[i];
  }
  return out;
}

/** Flags no-reply senders (noreply, do-not-reply, ...): mail to them is not read. */
export function noReply(names: readonly string[] = DEFAULT_NO_REPLY_NAMES): Checker {
  const isNoReply = risky('no_reply', 'no_reply_address', 'no_reply');
  const notNoReply = pass('no_reply');
  const firstLetters = new Set(names.map((name) => name.charCodeAt(0) | 0x20));
  return {
    name: 'no_reply',
    run({ parsed }) {
      // Every listed name starts with n or d: most local parts are decided by one character.
      const first = parsed.local.charCodeAt(0) | 0x20;
      if (!firstLetters.has(first)) return notNoReply;
      const name = withoutSeparators(mailboxName(parsed.local));
      return names.some((prefix) => name.startsWith(prefix)) ? isNoReply : notNoReply;
    },
  };
}
