/**
 * A set of ASCII domains that answers "is this domain, or any parent of it, listed?".
 * A Set and a walk over the dots: bench/ measures it well below a microsecond, so no trie.
 */
export class DomainSet {
  readonly #domains: Set<string>;

  constructor(domains: Iterable<string>) {
    this.#domains = new Set();
    for (const domain of domains) {
      const trimmed = domain.trim().toLowerCase();
      if (trimmed !== '' && !trimmed.startsWith('#')) this.#domains.add(trimmed);
    }
  }

  get size(): number {
    return this.#domains.size;
  }

  has(domain: string): boolean {
    return this.#domains.has(domain);
  }

  /** True when `domain` or one of its parents (`a.b.c` -> `b.c` -> `c`) is listed. */
  hasSelfOrParent(domain: string): boolean {
    let start = 0;
    while (start < domain.length) {
      if (this.#domains.has(start === 0 ? domain : domain.slice(start))) return true;
      const dot = domain.indexOf('.', start);
      if (dot < 0) return false;
      start = dot + 1;
    }
    return false;
  }
}
