/**
 * The mailbox name that role and no-reply rules look at: the local part before any `+tag`
 * (RFC 5233 subaddressing), case-folded. `Sales+2024@x` is the sales role.
 */
export function mailboxName(local: string): string {
  const plus = local.indexOf('+');
  return (plus < 0 ? local : local.slice(0, plus)).toLowerCase();
}
