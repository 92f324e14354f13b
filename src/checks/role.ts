import { DEFAULT_ROLE_NAMES } from '../data/lists.js';
import { pass, risky, type Checker } from './checker.js';
import { mailboxName } from './local-name.js';

/** Flags role accounts (RFC 2142 names and common ones): read by a team, or by no one. */
export function role(names: ReadonlySet<string> = DEFAULT_ROLE_NAMES): Checker {
  const isRole = risky('role', 'role_account', 'role');
  const notRole = pass('role');
  return {
    name: 'role',
    run({ parsed }) {
      return names.has(mailboxName(parsed.local)) ? isRole : notRole;
    },
  };
}
