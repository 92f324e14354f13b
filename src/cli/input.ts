import { Readable } from 'node:stream';
import { parse as parseCsv } from 'csv-parse';
import type { ParseResult } from '../address/parse.js';
import { repeatFinder } from '../service/batch/repeats.js';
import { UsageError } from './exit-codes.js';

/** A line longer than this is not an address list (an address is at most 254 octets). */
export const MAX_LINE_BYTES = 64 * 1024;

/** One address to verify, with where it came from. */
export interface InputItem {
  /**
   * Where it is: the 1-based line of a list (blank lines counted, as an editor numbers them),
   * or the row of a CSV file as a spreadsheet numbers it (a header is row 1). The records
   * carry it as `index`, and `batch --resume` goes by it.
   */
  readonly index: number;
  readonly address: string;
}

const NUL = 0x00;
const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * The input as UTF-8 bytes: UTF-8 as it comes, and UTF-16 (LE or BE, told by its byte order
 * mark, as Excel's "Unicode text" and Windows tools write it) decoded and re-encoded, so that
 * the readers below see one encoding. Without a mark, UTF-16's NUL bytes stop the run as binary.
 */
export async function* utf8(input: Readable): AsyncGenerator<Buffer> {
  let head: Buffer | undefined = Buffer.alloc(0);
  let decoder: InstanceType<typeof TextDecoder> | undefined;
  const decode = (bytes?: Buffer) => {
    const utf16 = decoder as InstanceType<typeof TextDecoder>;
    try {
      return Buffer.from(
        bytes === undefined ? utf16.decode() : utf16.decode(bytes, { stream: true }),
      );
    } catch {
      throw new UsageError('not valid UTF-16: this is not a text file of addresses');
    }
  };
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    let bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (head !== undefined) {
      // The first two bytes decide; a first chunk of one byte waits for the next.
      bytes = Buffer.concat([head, bytes]);
      if (bytes.length < 2) {
        head = bytes;
        continue;
      }
      head = undefined;
      const encoding =
        bytes[0] === 0xff && bytes[1] === 0xfe
          ? 'utf-16le'
          : bytes[0] === 0xfe && bytes[1] === 0xff
            ? 'utf-16be'
            : undefined;
      // The decoder drops the mark itself (ignoreBOM: false).
      if (encoding !== undefined) decoder = new TextDecoder(encoding, { fatal: true });
    }
    yield decoder === undefined ? bytes : decode(bytes);
  }
  if (head !== undefined && head.length > 0) yield head;
  if (decoder !== undefined) {
    const rest = decode();
    if (rest.length > 0) yield rest;
  }
}

/**
 * The addresses of a list, one a line, streamed: blank lines are skipped, and a line ends at
 * LF, CRLF or a lone CR (classic Mac OS, and some exports still write it); a UTF-8 byte order
 * mark is ignored, UTF-16 with one is read (see utf8). Bytes that are not text (a NUL, invalid
 * UTF-8) or a line over MAX_LINE_BYTES end the run with a UsageError naming the line, so
 * binary garbage never turns into thousands of "invalid" verdicts.
 */
export async function* readLines(input: Readable): AsyncGenerator<InputItem> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let line = 0;
  // A CR ended the last line: an LF right after it (maybe in the next chunk) is its CRLF.
  let afterCr = false;
  const emit = (bytes: Buffer): InputItem | undefined => {
    line++;
    if (bytes.includes(NUL)) {
      throw new UsageError(`line ${line}: a NUL byte: this is not a text file of addresses`);
    }
    let text: string;
    try {
      text = decoder.decode(bytes);
    } catch {
      throw new UsageError(`line ${line}: not valid UTF-8: this is not a text file of addresses`);
    }
    const address = text.trim();
    return address === '' ? undefined : { index: line, address };
  };
  for await (const bytes of utf8(input)) {
    if (bytes.length === 0) continue;
    let start = afterCr && bytes[0] === NEWLINE ? 1 : 0;
    afterCr = false;
    // Each kind of line end is searched for once per chunk, not once per line.
    let newline = bytes.indexOf(NEWLINE, start);
    let cr = bytes.indexOf(CARRIAGE_RETURN, start);
    while (newline >= 0 || cr >= 0) {
      const end = cr < 0 || (newline >= 0 && newline < cr) ? newline : cr;
      const piece = bytes.subarray(start, end);
      start = end + 1;
      if (end === cr) {
        if (bytes[start] === NEWLINE) start++;
        else if (start === bytes.length) afterCr = true;
      }
      if (newline >= 0 && newline < start) newline = bytes.indexOf(NEWLINE, start);
      if (cr >= 0 && cr < start) cr = bytes.indexOf(CARRIAGE_RETURN, start);
      const whole = pendingBytes === 0 ? piece : Buffer.concat([...pending, piece]);
      pending = [];
      pendingBytes = 0;
      if (whole.length > MAX_LINE_BYTES) throw tooLong(line + 1);
      const item = emit(whole);
      if (item !== undefined) yield item;
    }
    const rest = bytes.subarray(start);
    if (rest.length > 0) {
      pendingBytes += rest.length;
      // Checked before the line ends: a 1 GB line is refused at 64 KiB, never buffered.
      if (pendingBytes > MAX_LINE_BYTES) throw tooLong(line + 1);
      pending.push(rest);
    }
  }
  if (pendingBytes > 0) {
    const item = emit(Buffer.concat(pending));
    if (item !== undefined) yield item;
  }
}

function tooLong(line: number): UsageError {
  return new UsageError(
    `line ${line}: longer than ${MAX_LINE_BYTES} bytes: this is not a list of addresses`,
  );
}

/** A list being read, and why it is read as CSV when nothing said so. */
export interface ListReading {
  readonly items: AsyncGenerator<InputItem>;
  /** Read as CSV (so the index is a row), else one address a line. */
  readonly csv: boolean;
  /** Why an input not declared CSV is read as CSV (what its first line looks like). */
  readonly csvBecause?: string;
}

/**
 * The addresses of a list: a CSV column when `csv` says so, else by the list's first line that
 * is not blank: several cells (a separator outside quotes, which no address has) or a lone
 * cell that names an email column are a CSV file's header or first row (`cat list.csv |
 * mailverdict batch -`), and anything else starts a list of one address a line.
 */
export async function readList(
  input: Readable,
  options: { readonly csv: boolean; readonly column: string | undefined },
): Promise<ListReading> {
  if (options.csv) return { items: readCsvColumn(input, options.column), csv: true };
  const { first, chunks } = await peekFirstLine(utf8(input));
  const replay = Readable.from(chunks);
  const because = first === undefined ? undefined : csvLook(first);
  return because === undefined
    ? { items: readLines(replay), csv: false }
    : { items: readCsvColumn(replay, undefined), csv: true, csvBecause: because };
}

/** What makes a first line a CSV header or row, in words; undefined for an address line. */
function csvLook(first: string): string | undefined {
  const shown = JSON.stringify(first.length > 60 ? `${first.slice(0, 57)}...` : first);
  const { count } = separatorOf(first);
  if (count > 0) return `its first line, ${shown}, has ${count + 1} columns`;
  const cell = first.trim().replace(/^"(.*)"$/, '$1');
  return EMAIL_HEADERS.has(headerKey(cell)) ? `its first line, ${shown}, is a header` : undefined;
}

/**
 * The addresses of one column of a CSV file (RFC 4180), streamed through csv-parse. The column
 * is the one `column` names, else the first whose header reads as an email (`email`, `E-mail`,
 * `Email Address`, `email_address`, `mail`, any case), else the only one. A first row that
 * holds an address is no header: the file has none, and that row is verified too. With no
 * such column among several, the run stops rather than verify names or phone numbers.
 */
export async function* readCsvColumn(
  input: Readable,
  column: string | undefined,
): AsyncGenerator<InputItem> {
  const { first, chunks } = await peekFirstLine(textOnly(utf8(input)));
  const { delimiter } = separatorOf(first ?? '');
  const source = Readable.from(chunks);
  const parser = source.pipe(
    parseCsv({
      bom: true,
      delimiter,
      relax_column_count: true,
      // A blank line is a row of a spreadsheet: counted, so that the index is the row shown.
      skip_empty_lines: false,
      max_record_size: MAX_LINE_BYTES,
    }),
  );
  // pipe() does not pass a failure on: the parser ends with it, and the loop below sees it.
  source.once('error', (error) => parser.destroy(error));
  let addressColumn: number | undefined;
  let row = 0;
  try {
    for await (const cells of parser as AsyncIterable<string[]>) {
      row++;
      const blank = cells.length === 1 && (cells[0] as string).trim() === '';
      if (addressColumn === undefined && !blank) {
        const found = columnOf(cells, column);
        addressColumn = found.index;
        if (found.header) continue;
      }
      const value = addressColumn === undefined ? '' : (cells[addressColumn] ?? '').trim();
      if (value.includes('\u0000') || value.includes('\ufffd')) {
        throw new UsageError(`row ${row}: binary data: this is not a CSV file of addresses`);
      }
      if (value !== '') yield { index: row, address: value };
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
    // csv-parse says where (its line), then quotes the offending field whole: not that.
    const message = (error as Error).message.replace(/, value is .*$/s, '');
    throw new UsageError(`not a CSV file of addresses: ${message}`);
  }
}

/** The bytes, stopped at the first NUL: binary data is refused before csv-parse quotes it. */
async function* textOnly(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  for await (const chunk of chunks) {
    if (chunk.includes(NUL)) {
      throw new UsageError('a NUL byte: this is not a CSV file of addresses');
    }
    yield chunk;
  }
}

/** The separators spreadsheets write: `,`, and `;` where the decimal mark is a comma, and tab. */
const DELIMITERS = [',', ';', '\t'] as const;

/** The input's first line that is not blank, and every chunk read, to be read again whole. */
interface Peeked {
  /** Undefined for an input with no such line within MAX_LINE_BYTES. */
  readonly first: string | undefined;
  readonly chunks: AsyncIterable<Buffer>;
}

/**
 * Reads as far as the first line that is not blank (a line break inside quotes does not end
 * it), holding back only that much; the chunks come out whole, in order.
 */
async function peekFirstLine(input: AsyncIterable<Buffer>): Promise<Peeked> {
  const iterator = input[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let text = '';
  let first: string | undefined;
  let ended = false;
  while (first === undefined && !ended && text.length <= MAX_LINE_BYTES) {
    const next = await iterator.next();
    if (next.done === true) ended = true;
    else {
      head.push(next.value);
      text += next.value.toString('utf8');
    }
    first = firstLineOf(text, ended);
  }
  async function* chunks(): AsyncGenerator<Buffer> {
    yield* head;
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) return;
      yield next.value;
    }
  }
  return { first, chunks: chunks() };
}

/** The first line of `text` that is not blank (a BOM is blank), if it is whole yet. */
function firstLineOf(text: string, ended: boolean): string | undefined {
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '"') quoted = !quoted;
    else if (!quoted && (char === '\n' || char === '\r')) {
      const line = text.slice(start, i).replace(/^\ufeff/, '');
      if (line.trim() !== '') return line;
      start = i + 1;
    }
  }
  const rest = text.slice(start).replace(/^\ufeff/, '');
  return ended && rest.trim() !== '' ? rest : undefined;
}

/**
 * A line's separator, outside quotes: the one it holds most of (with how many), a comma when
 * none. Excel writes `;` in much of Europe; TSV exports use tabs.
 */
function separatorOf(line: string): { delimiter: string; count: number } {
  const counts = new Map<string, number>(DELIMITERS.map((d) => [d, 0]));
  let quoted = false;
  for (const char of line) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && counts.has(char)) counts.set(char, (counts.get(char) ?? 0) + 1);
  }
  const [delimiter, count] = [...counts].reduce((best, entry) =>
    entry[1] > best[1] ? entry : best,
  );
  return { delimiter, count };
}

/** Header names that mean "the address", compared without case, spaces or punctuation. */
const EMAIL_HEADERS: ReadonlySet<string> = new Set(['email', 'emailaddress', 'mail', 'emails']);

const headerKey = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, '');

/** Which column holds the addresses, and whether the first row is a header (not data). */
function columnOf(
  first: readonly string[],
  column: string | undefined,
): { index: number; header: boolean } {
  const names = first.map((name) => name.trim().toLowerCase());
  const shown = first.map((name) => JSON.stringify(name.trim())).join(', ');
  if (column !== undefined) {
    const wanted = column.trim().toLowerCase();
    const byName = names.indexOf(wanted);
    if (byName >= 0) return { index: byName, header: true };
    const byKey = first.findIndex((name) => headerKey(name) === headerKey(wanted));
    if (byKey >= 0 && headerKey(wanted) !== '') return { index: byKey, header: true };
    throw new UsageError(`no column ${JSON.stringify(column)} in the CSV header (${shown})`);
  }
  const email = first.findIndex((name) => EMAIL_HEADERS.has(headerKey(name)));
  if (email >= 0) return { index: email, header: true };
  // No header names an address, yet a cell holds one: the file starts with its data.
  const address = first.findIndex((cell) => cell.includes('@'));
  if (address >= 0) return { index: address, header: false };
  if (first.length === 1) return { index: 0, header: true };
  throw new UsageError(
    `no email column in the CSV header (${shown}): name the column with --column`,
  );
}

/** An address to verify, marked when it repeats an earlier one of its list. */
export interface MarkedItem extends InputItem {
  readonly duplicate: boolean;
}

/** The items, each marked `duplicate` by the rule batch jobs use (repeatFinder). */
export async function* markRepeats(
  items: AsyncIterable<InputItem>,
  parse: (address: string) => ParseResult,
): AsyncGenerator<MarkedItem> {
  const earlierOf = repeatFinder();
  for await (const item of items) {
    const earlier = earlierOf(item.address, parse(item.address), item.index);
    yield { ...item, duplicate: earlier !== undefined };
  }
}
