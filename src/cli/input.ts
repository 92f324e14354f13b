import type { Readable } from 'node:stream';
import { parse as parseCsv } from 'csv-parse';
import { UsageError } from './exit-codes.js';

/** A line longer than this is not an address list (an address is at most 254 octets). */
export const MAX_LINE_BYTES = 64 * 1024;

/** One address to verify, with where it came from. */
export interface InputItem {
  /** 1-based line (or CSV record) number, for messages. */
  readonly line: number;
  readonly address: string;
}

const NUL = 0x00;
const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * The addresses of a list, one a line, streamed: blank lines are skipped, a trailing CR is
 * dropped, a UTF-8 byte order mark is ignored. Bytes that are not text (a NUL, invalid UTF-8)
 * or a line over MAX_LINE_BYTES end the run with a UsageError naming the line, so binary
 * garbage never turns into thousands of "invalid" verdicts.
 */
export async function* readLines(input: Readable): AsyncGenerator<InputItem> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let line = 0;
  const emit = (bytes: Buffer): InputItem | undefined => {
    line++;
    let end = bytes.length;
    if (end > 0 && bytes[end - 1] === CARRIAGE_RETURN) end--;
    if (bytes.subarray(0, end).includes(NUL)) {
      throw new UsageError(`line ${line}: a NUL byte: this is not a text file of addresses`);
    }
    let text: string;
    try {
      text = decoder.decode(bytes.subarray(0, end));
    } catch {
      throw new UsageError(`line ${line}: not valid UTF-8: this is not a text file of addresses`);
    }
    const address = text.trim();
    return address === '' ? undefined : { line, address };
  };
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    for (;;) {
      const newline = bytes.indexOf(NEWLINE, start);
      if (newline < 0) break;
      const piece = bytes.subarray(start, newline);
      start = newline + 1;
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

/**
 * The addresses of one column of a CSV file (RFC 4180, with a header row), streamed through
 * csv-parse. The column is named by `column`, else the header `email` (any case), else the
 * first column.
 */
export async function* readCsvColumn(
  input: Readable,
  column: string | undefined,
): AsyncGenerator<InputItem> {
  const parser = input.pipe(
    parseCsv({
      bom: true,
      relax_column_count: true,
      skip_empty_lines: true,
      max_record_size: MAX_LINE_BYTES,
    }),
  );
  let index: number | undefined;
  let record = 0;
  try {
    for await (const row of parser as AsyncIterable<string[]>) {
      record++;
      if (index === undefined) {
        index = headerIndex(row, column);
        continue;
      }
      const value = (row[index] ?? '').trim();
      if (value.includes('\u0000') || value.includes('\ufffd')) {
        throw new UsageError(`record ${record}: binary data: this is not a CSV file of addresses`);
      }
      if (value !== '') yield { line: record, address: value };
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`record ${record + 1}: ${(error as Error).message}`);
  }
}

function headerIndex(header: readonly string[], column: string | undefined): number {
  const names = header.map((name) => name.trim().toLowerCase());
  if (column === undefined) {
    const email = names.indexOf('email');
    return email >= 0 ? email : 0;
  }
  const byName = names.indexOf(column.trim().toLowerCase());
  if (byName >= 0) return byName;
  throw new UsageError(
    `no column ${JSON.stringify(column)} in the CSV header (${header.join(', ')})`,
  );
}
