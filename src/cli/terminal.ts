/**
 * Text from addresses never reaches a terminal raw: an address can carry ESC and
 * the C1 controls that move the cursor or rewrite the screen, and bidi overrides that make a
 * line read differently from what it holds. Each such character is shown as a `\u` escape.
 */
// C0 and C1 controls, DEL, the line/paragraph separators, the bidi embeddings, overrides and
// isolates (Trojan Source) and marks (ALM, LRM, RLM), and the invisible ones (zero-width
// space, joiners, word joiner, BOM) that make two different addresses print alike.
const UNSAFE_FOR_TERMINAL =
  // eslint-disable-next-line no-control-regex -- finding them is the point
  /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

export function escapeForTerminal(text: string): string {
  return text.replace(UNSAFE_FOR_TERMINAL, escapeChar);
}

function escapeChar(char: string): string {
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * JSON whose strings carry no character a terminal acts on: JSON.stringify escapes C0
 * controls but leaves C1, DEL, separators and bidi controls raw. The result is still valid
 * JSON and parses to the same value.
 */
export function safeJson(value: unknown): string {
  return JSON.stringify(value).replace(UNSAFE_FOR_TERMINAL, escapeChar);
}

/**
 * A cell longer than this does not widen its column: one 5,000-character input runs past its
 * column on its own row instead of pushing every other row 5,000 spaces to the right.
 */
const MAX_COLUMN_WIDTH = 80;

/** Rows of cells as aligned columns; the last column is not padded. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const cells = [header, ...rows].map((row) => row.map(escapeForTerminal));
  const widths = header.map((_, i) =>
    Math.max(
      0,
      ...cells.map((row) => (row[i] ?? '').length).filter((length) => length <= MAX_COLUMN_WIDTH),
    ),
  );
  return cells.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] as number)))
      .join('  ')
      .trimEnd(),
  );
}

/** A time for a table: ISO 8601, or empty for none. */
export const when = (ms: number | null) => (ms === null ? '' : new Date(ms).toISOString());

/** A time as --json prints it: ISO 8601, or null, as the API's wire objects do. */
export const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
