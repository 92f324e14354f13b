/**
 * The mailbox name that role and no-reply rules look at: the local part before any `+tag`
 * (RFC 5233 subaddressing), case-folded. `Sales+2024@x` is the sales role.
 */
export function mailboxName(local: string): string {
  // One pass finds the `+` and whether anything needs folding (indexOf is a runtime call).
  let end = local.length;
  let fold = false;
  for (let i = 0; i < local.length; i++) {
    const code = local.charCodeAt(i);
    if (code === 0x2b) {
      end = i;
      break;
    }
    if ((code >= 0x41 && code <= 0x5a) || code >= 0x80) fold = true;
  }
  const name = end === local.length ? local : local.slice(0, end);
  return fold ? name.toLowerCase() : name;
}
