import { parseAddress } from '../../address/parse.js';
import type { PendingJobItem } from '../../ports/store.js';

/**
 * The domain an address is grouped under: its A-label form as the parser gives it, so that
 * `bücher.de`, `BÜCHER.de` and `xn--bcher-kva.de` are one domain (one MX lookup, one SMTP
 * session); for what does not parse, the text after the last `@`, lowercased.
 */
export function groupingDomain(email: string): string {
  const parsed = parseAddress(email);
  return parsed.ok ? parsed.asciiDomain : email.slice(email.lastIndexOf('@') + 1).toLowerCase();
}

/**
 * Splits a job's pending addresses into chunks for workers, keeping each domain's addresses
 * together: one worker then asks DNS about a domain once and holds its SMTP sessions (and its
 * catch-all answer) itself. Domains are packed in order of first appearance, up to `size`
 * addresses a chunk; a domain larger than that gives full chunks of its own, and its rest is
 * packed like a small domain. Positions within a chunk ascend. Deterministic, so the same
 * pending list always gives the same chunks.
 */
export function chunkByDomain(
  items: readonly PendingJobItem[],
  size: number,
  domainOf: (email: string) => string = groupingDomain,
): number[][] {
  if (!(Number.isInteger(size) && size >= 1)) throw new RangeError('chunk size must be >= 1');
  const byDomain = new Map<string, number[]>();
  for (const { position, email } of items) {
    const domain = domainOf(email);
    const positions = byDomain.get(domain);
    if (positions === undefined) byDomain.set(domain, [position]);
    else positions.push(position);
  }
  const chunks: number[][] = [];
  let open: number[] = [];
  for (const positions of byDomain.values()) {
    let start = 0;
    for (; positions.length - start >= size; start += size) {
      chunks.push(positions.slice(start, start + size));
    }
    const rest = positions.slice(start);
    if (open.length + rest.length > size) {
      chunks.push(open);
      open = [];
    }
    open.push(...rest);
  }
  if (open.length > 0) chunks.push(open);
  return chunks.map((chunk) => chunk.sort((a, b) => a - b));
}
