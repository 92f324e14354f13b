import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { parse as parseCsv } from 'csv-parse';
import type { ParseResult } from '../address/parse.js';
import { UsageError } from './exit-codes.js';
import { reasonOf } from './io.js';
import { markRepeats, type InputItem, type MarkedItem } from './input.js';
import { CSV_COLUMNS, CSV_HEADER, type FormatName, type RecordFormat } from './records.js';

/** What an earlier run of `batch` left in its output file, read for `--resume`. */
export interface EarlierOutput {
  /** The file, as named on the command line. */
  readonly path: string;
  /** The input of each record, as the format reads it back, by index. */
  readonly inputs: ReadonlyMap<number, string>;
  /** The bytes that hold whole records (and the CSV header): appending starts there. */
  readonly wholeBytes: number;
  /** Whether bytes follow them: a record cut off in mid-write, cut away before appending. */
  readonly halfWritten: boolean;
  /** Whether the file lacks the CSV header (it was empty). */
  readonly headerMissing: boolean;
}

/**
 * Longest line a record takes: an input is at most 64 KiB, and the other fields a few hundred
 * bytes. A longer line is no record of ours, and reading stops there.
 */
const MAX_RECORD_BYTES = 256 * 1024;

/**
 * Reads the output of an earlier run for `--resume`: which indexes it holds, with their
 * inputs. Every way it is not such a file is a UsageError of one line, before anything is
 * verified or written: another format than `format`, a line that is no record (a foreign
 * line), two records of one index. A last record without its newline is what a killed run or
 * a full disk leaves: it is not counted, and the caller cuts it away and verifies its address
 * again (so that no record is lost and none doubled).
 */
export async function readEarlierOutput(
  path: string,
  format: RecordFormat,
): Promise<EarlierOutput> {
  const { head, size } = await firstBytes(path);
  const found = formatOf(head, size);
  const shown = JSON.stringify(path);
  if (found === 'foreign') {
    throw new UsageError(
      `${shown} is not the output of mailverdict batch (NDJSON or CSV records with an index): --resume takes the file an earlier run of this list wrote`,
    );
  }
  if (found !== 'empty' && found !== format.name) {
    throw new UsageError(
      `${shown} holds ${found.toUpperCase()} records, and -o says ${format.name}: resume it with -o ${found}`,
    );
  }
  if (found === 'empty') {
    return { path, inputs: new Map(), wholeBytes: 0, halfWritten: size > 0, headerMissing: true };
  }
  const read = format.name === 'csv' ? await readCsvRecords(path) : await readNdjsonRecords(path);
  const inputs = new Map<number, string>();
  const lineOf = new Map<number, number>();
  for (const { index, input, line } of read.records) {
    const earlier = lineOf.get(index);
    if (earlier !== undefined) {
      throw new UsageError(
        `${shown} has two records for index ${index} (lines ${earlier} and ${line}): it is not the output of one list`,
      );
    }
    lineOf.set(index, line);
    inputs.set(index, input);
  }
  return {
    path,
    inputs,
    wholeBytes: read.wholeBytes,
    halfWritten: read.halfWritten,
    headerMissing: false,
  };
}

/** One record as read back: its index, its input, and the line it starts on. */
interface ReadRecord {
  readonly index: number;
  readonly input: string;
  readonly line: number;
}

interface ReadRecords {
  readonly records: ReadRecord[];
  readonly wholeBytes: number;
  readonly halfWritten: boolean;
}

/** The file's first bytes, as many as the CSV header has, and its size. */
async function firstBytes(path: string): Promise<{ head: Buffer; size: number }> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw new UsageError(`cannot read ${JSON.stringify(path)}: ${reasonOf(error)}`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) {
      throw new UsageError(`${JSON.stringify(path)} is not a file: --resume takes an output file`);
    }
    const buffer = Buffer.alloc(CSV_HEADER.length);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return { head: buffer.subarray(0, bytesRead), size: info.size };
  } finally {
    await handle.close();
  }
}

/**
 * Which of our formats a file starts like, told from its first bytes: `empty` for a file
 * with nothing done yet, which is nothing, or all blank, or a CSV header cut off in mid-write
 * (a run stopped at once).
 */
function formatOf(head: Buffer, size: number): FormatName | 'empty' | 'foreign' {
  const text = head.toString('utf8');
  const whole = size === head.length;
  if (text.startsWith('{"index":') || '{"index":'.startsWith(text.trimEnd())) {
    return text.trim() === '' ? (whole ? 'empty' : 'foreign') : 'ndjson';
  }
  if (text === CSV_HEADER) return 'csv';
  if (CSV_HEADER.startsWith(text) && whole) return 'empty';
  return 'foreign';
}

/** The start of a record cut off in mid-write: what our writer puts first on a line. */
const HALF_RECORD: Readonly<Record<FormatName, (tail: string) => boolean>> = {
  ndjson: (tail) => tail.startsWith('{"index":') || '{"index":'.startsWith(tail),
  csv: (tail) => /^\d+(?:,|$)/.test(tail),
};

/** The line is no record: the one-line refusal that says which. */
function foreignLine(path: string, line: number): UsageError {
  return new UsageError(
    `${JSON.stringify(path)} line ${line} is not a record of mailverdict batch: --resume takes the file an earlier run of this list wrote, unedited`,
  );
}

/** NDJSON records, a line each: an object with a whole index from 1 and a text input. */
async function readNdjsonRecords(path: string): Promise<ReadRecords> {
  const records: ReadRecord[] = [];
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let wholeBytes = 0;
  let line = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    let start = 0;
    for (let end = chunk.indexOf(0x0a); end >= 0; end = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, end);
      const whole = pendingBytes === 0 ? piece : Buffer.concat([...pending, piece]);
      pending = [];
      pendingBytes = 0;
      start = end + 1;
      wholeBytes += whole.length + 1;
      line++;
      const text = whole.toString('utf8');
      // A blank line holds no record, and dropping it loses none.
      if (text.trim() === '') continue;
      const record = ndjsonRecord(text);
      if (record === undefined) throw foreignLine(path, line);
      records.push({ ...record, line });
    }
    const rest = chunk.subarray(start);
    pendingBytes += rest.length;
    if (pendingBytes > MAX_RECORD_BYTES) throw foreignLine(path, line + 1);
    pending.push(rest);
  }
  const tail = Buffer.concat(pending).toString('utf8');
  if (tail !== '' && !HALF_RECORD.ndjson(tail)) throw foreignLine(path, line + 1);
  return { records, wholeBytes, halfWritten: tail !== '' };
}

function ndjsonRecord(text: string): { index: number; input: string } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { index, input, state } = value as Record<string, unknown>;
  if (!isIndex(index) || typeof input !== 'string' || typeof state !== 'string') return undefined;
  return { index, input };
}

const isIndex = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;

const INDEX_COLUMN = CSV_COLUMNS.indexOf('index');
const INPUT_COLUMN = CSV_COLUMNS.indexOf('input');

/**
 * CSV records under our header, read with csv-parse (a quoted cell may hold a line break): a
 * record is whole once its line break is written; a last one without it, or with a quote
 * left open, was cut off.
 */
async function readCsvRecords(path: string): Promise<ReadRecords> {
  const parser = createReadStream(path).pipe(
    parseCsv({
      raw: true,
      info: true,
      relax_column_count: true,
      skip_empty_lines: false,
      max_record_size: MAX_RECORD_BYTES,
    }),
  );
  const records: ReadRecord[] = [];
  let wholeBytes = 0;
  let line = 1;
  let cutOff = false;
  try {
    for await (const { record: cells, raw, info } of parser as AsyncIterable<{
      record: string[];
      raw: string;
      info: { bytes: number };
    }>) {
      const startLine = line;
      line += raw.split('\n').length - 1;
      if (!raw.endsWith('\n')) {
        cutOff = true;
        break;
      }
      wholeBytes = info.bytes;
      // A blank line holds no record, and dropping it loses none.
      if (raw === '\n') continue;
      if (startLine === 1) {
        if (raw !== CSV_HEADER) throw foreignLine(path, 1);
        continue;
      }
      const index = Number(cells[INDEX_COLUMN]);
      const input = cells[INPUT_COLUMN];
      if (
        cells.length !== CSV_COLUMNS.length ||
        !/^[1-9]\d*$/.test(cells[INDEX_COLUMN] ?? '') ||
        !isIndex(index) ||
        input === undefined
      ) {
        throw foreignLine(path, startLine);
      }
      records.push({ index, input, line: startLine });
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
    // A quote left open at the end is a cell cut off in mid-write; anything else is not ours.
    if ((error as { code?: string }).code !== 'CSV_QUOTE_NOT_CLOSED') throw foreignLine(path, line);
    cutOff = true;
  }
  if (cutOff) {
    const tail = await bytesFrom(path, wholeBytes);
    if (!HALF_RECORD.csv(tail)) throw foreignLine(path, line);
  }
  return { records, wholeBytes, halfWritten: cutOff };
}

/** The file's text from `offset` on, at most MAX_RECORD_BYTES of it. */
async function bytesFrom(path: string, offset: number): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(MAX_RECORD_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** The list's items that the earlier output has no record of, and how many the list has. */
export interface ResumePlan {
  readonly missing: readonly MarkedItem[];
  readonly total: number;
}

/**
 * Reads the whole list against the earlier output before anything is verified: every record
 * of the file must be of the address at its index (else the file is another list's output, a
 * UsageError of one line), and what it has no record of is the work left. Repeats are marked
 * over the whole list, as the first run would have marked them.
 */
export async function missingItems(
  items: AsyncIterable<InputItem>,
  parse: (address: string) => ParseResult,
  earlier: EarlierOutput,
  format: RecordFormat,
  where: (index: number) => string,
): Promise<ResumePlan> {
  const missing: MarkedItem[] = [];
  const found = new Set<number>();
  let total = 0;
  for await (const item of markRepeats(items, parse)) {
    total++;
    const written = earlier.inputs.get(item.index);
    if (written === undefined) missing.push(item);
    else if (written === format.inputAsRead(item.address)) found.add(item.index);
    else {
      throw new UsageError(
        `${JSON.stringify(earlier.path)} is not the output of this list: its record ${item.index} is of ${JSON.stringify(written)}, and ${where(item.index)} is ${JSON.stringify(item.address)}`,
      );
    }
  }
  if (found.size < earlier.inputs.size) {
    const [stray] = [...earlier.inputs.keys()].filter((index) => !found.has(index));
    throw new UsageError(
      `${JSON.stringify(earlier.path)} is not the output of this list: it has a record ${stray}, and ${where(stray as number)} holds no address`,
    );
  }
  return { missing, total };
}

/** Where records go: standard output, or the file a resumed run appends to. */
export interface RecordSink {
  write(text: string): Promise<void> | undefined;
  close(): Promise<void>;
}

/**
 * The earlier output, ready to take the records left: a record cut off in mid-write is cut
 * away first (its address is among the missing ones), and an empty CSV gets its header.
 */
export async function appendTo(earlier: EarlierOutput, format: RecordFormat): Promise<RecordSink> {
  const handle = await open(earlier.path, 'r+');
  try {
    if (earlier.halfWritten) await handle.truncate(earlier.wholeBytes);
  } catch (error) {
    await handle.close();
    throw error;
  }
  let position = earlier.wholeBytes;
  const writeAll = async (text: string) => {
    const bytes = Buffer.from(text);
    let done = 0;
    while (done < bytes.length) {
      const { bytesWritten } = await handle.write(bytes, done, bytes.length - done, position);
      done += bytesWritten;
      position += bytesWritten;
    }
  };
  // One write at a time, in the order asked: each goes where the last one ended.
  let last: Promise<void> = Promise.resolve();
  const write = (text: string) => (last = last.then(() => writeAll(text)));
  if (earlier.headerMissing && format.header !== '') await write(format.header);
  return {
    write: (text) => (text === '' ? undefined : write(text)),
    close: async () => {
      await last.catch(() => {});
      await handle.close();
    },
  };
}
