/**
 * The mailbox name that role and no-reply rules look at: the local part before any `+tag`
 * (RFC 5233 subaddressing), case-folded. `Sales+2024@x` is the sales role.
 */
export function mailboxName(local: string): string {
  const plus = local.indexOf('+');
  const name = plus < 0 ? local : local.slice(0, plus);
  for (let i = 0; i < name.length; i++) {
    const code = name.charCodeAt(i);
    if ((code >= 0x41 && code <= 0x5a) || code >= 0x80) return name.toLowerCase();
  }
  return name;
}
