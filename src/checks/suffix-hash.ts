/**
 * The hash both domain sets key by: FNV-1a read right to left, so that a domain's parents
 * (`b.c` of `a.b.c`) are hashed on the way to the whole and every parent is probed in one
 * pass over the domain.
 */
export const FNV_OFFSET = 0x811c9dc5;
export const FNV_PRIME = 0x01000193;

/** The right-to-left FNV-1a hash of `domain` from `start` to its end. */
export function suffixHash(domain: string, start: number): number {
  let hash = FNV_OFFSET;
  for (let i = domain.length - 1; i >= start; i--)
    hash = Math.imul(hash ^ domain.charCodeAt(i), FNV_PRIME);
  return hash;
}
