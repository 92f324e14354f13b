/**
 * The shape of a JSON text read on its bytes as they arrive, before anything parses it: how
 * deep it nests and how many elements it holds, so that `[[[[...` or `[1,1,1,...` is refused
 * after a few bytes, not after JSON.parse has built millions of arrays from 16 MB of them.
 *
 * Only the structure is followed: strings are skipped (their escapes honoured), everything else
 * is one byte at a time. UTF-8 never uses a byte below 0x80 inside a multi-byte character, so
 * the bytes `"`, `\`, `[`, `{`, `,` always mean themselves. Whether the text is valid JSON is
 * JSON.parse's to say afterwards; what this counts of an invalid text only decides sooner.
 */
export class JsonShape {
  /** Elements so far: each `[` or `{` opened and each `,`, so about one per value. */
  elements = 0;
  /** Member names at the top level, when the text is an object (JSON.parse keeps one per name). */
  topLevelMembers = 0;
  #depth = 0;
  #inString = false;
  #escaped = false;
  #expectName = false;

  constructor(
    private readonly maxDepth: number,
    private readonly maxElements: number,
  ) {}

  /**
   * Follows `bytes`, the next part of the text. Returns which limit the text passed, if any:
   * the nesting depth or the element count. Linear: a string is crossed by indexOf, a step per
   * quote or backslash, not per character.
   */
  scan(bytes: Uint8Array): 'depth' | 'elements' | undefined {
    const end = bytes.length;
    let nextQuote = -1;
    let nextBackslash = -1;
    let i = 0;
    while (i < end) {
      if (this.#inString) {
        if (this.#escaped) {
          this.#escaped = false;
          i++;
          continue;
        }
        if (nextQuote < i) nextQuote = found(bytes.indexOf(QUOTE, i), end);
        if (nextBackslash < i) nextBackslash = found(bytes.indexOf(BACKSLASH, i), end);
        if (nextBackslash < nextQuote) {
          // The byte after a backslash is escaped, even if it is in the next part.
          this.#escaped = true;
          i = nextBackslash + 1;
        } else {
          this.#inString = nextQuote === end;
          i = nextQuote + 1;
        }
        continue;
      }
      const byte = bytes[i] as number;
      i++;
      if (byte === QUOTE) {
        this.#inString = true;
        if (this.#depth === 1 && this.#expectName) this.topLevelMembers++;
        this.#expectName = false;
      } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        this.#depth++;
        this.elements++;
        if (this.#depth > this.maxDepth) return 'depth';
        if (this.elements > this.maxElements) return 'elements';
        this.#expectName = this.#depth === 1 && byte === OPEN_BRACE;
      } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        this.#depth--;
      } else if (byte === COMMA) {
        this.elements++;
        if (this.elements > this.maxElements) return 'elements';
        if (this.#depth === 1) this.#expectName = true;
      }
    }
    return undefined;
  }
}

/** An indexOf result, with "not found" as the end of the part. */
function found(index: number, end: number): number {
  return index === -1 ? end : index;
}

/**
 * The first member name the top-level object of `text` (valid JSON) repeats, or undefined.
 * Only the top level: every field we take is a string or an array of strings, so a nested
 * object is refused for its type anyway. Strings are skipped with indexOf, so a 13 MB batch
 * costs a step per string and per character between strings, not one per character.
 */
export function repeatedMember(text: string): string | undefined {
  const names = new Set<string>();
  let repeated: string | undefined;
  walkMembers(text, (start, end) => {
    const raw = text.slice(start + 1, end);
    const name = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
    if (names.has(name)) repeated = name;
    names.add(name);
    return repeated !== undefined;
  });
  return repeated;
}

/** Calls `member` with the quotes around each top-level member name of `text` until it returns true. */
function walkMembers(text: string, member: (start: number, end: number) => boolean): void {
  let depth = 0;
  let expectName = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (char === QUOTE) {
      const end = stringEnd(text, i);
      if (depth === 1 && expectName) {
        if (member(i, end)) return;
        expectName = false;
      }
      i = end;
    } else if (char === OPEN_BRACE || char === OPEN_BRACKET) {
      depth++;
      expectName = depth === 1;
    } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
      depth--;
    } else if (char === COMMA && depth === 1) {
      expectName = true;
    }
  }
}

/** The index of the quote that closes the string opening at `start` (an odd run of \ escapes). */
function stringEnd(text: string, start: number): number {
  let end = text.indexOf('"', start + 1);
  for (;;) {
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
