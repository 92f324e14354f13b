import { stringify } from 'csv-stringify/sync';
import type { Verdict } from '../engine/verdict.js';
import { DETAILED_FIELDS, toResultRecord, type ResultRecord } from '../format/shapes.js';
import { safeJson } from './terminal.js';

/**
 * What the CLI writes for one address: where it was in the input, the input as given, then the
 * record a batch's results carry (the detailed shape, the risk factors, the error), and
 * `duplicate: true` (as in the API's results) when it repeats an earlier address of the run.
 */
export interface CliRecord extends ResultRecord {
  /** The input line, or the CSV row (a header is row 1), 1-based; an argument's position. */
  index: number;
  input: string;
  duplicate?: true;
}

/** Where a record's address was, and whether it repeats an earlier one. */
export interface RecordPlace {
  readonly index: number;
  readonly input: string;
  readonly duplicate: boolean;
}

/** The record of a verdict verified here. */
export function recordOf(verdict: Verdict, index: number, duplicate = false): CliRecord {
  return cliRecordOf({ index, input: verdict.input, duplicate }, toResultRecord(verdict));
}

/**
 * The record of one address from its batch record, whether this process verified it or a
 * server's results carried it: one builder, so that local and `--server` runs write the same
 * fields in the same order. A field the server adds beyond these is not written.
 */
export function cliRecordOf(place: RecordPlace, record: ResultRecord): CliRecord {
  const out: Record<string, unknown> = { index: place.index, input: place.input };
  for (const field of DETAILED_FIELDS) out[field] = record[field];
  out.risk_factors = [...record.risk_factors];
  out.error =
    record.error === null ? null : { code: record.error.code, message: record.error.message };
  if (place.duplicate) out.duplicate = true;
  return out as unknown as CliRecord;
}

export type FormatName = 'ndjson' | 'csv';

/** One output format: a header (CSV) and a line per record, each ending in a newline. */
export interface RecordFormat {
  readonly name: FormatName;
  readonly header: string;
  line(record: CliRecord): string;
  /** A record's input as a reader of this format reads it back (`--resume` compares them). */
  inputAsRead(input: string): string;
}

/** NDJSON: one JSON object a line, with no raw terminal controls (see safeJson). */
export const NDJSON: RecordFormat = {
  name: 'ndjson',
  header: '',
  line: (record) => `${safeJson(record)}\n`,
  // safeJson's escapes are JSON's: the text parses back as it was.
  inputAsRead: (input) => input,
};

/** What a reader scans first, then the rest of the detailed shape in its own order. */
const LEADING_COLUMNS = [
  'index',
  'input',
  'email',
  'state',
  'reason',
  'score',
  'risk_factors',
  'error',
] as const;
/** The CSV's columns: `duplicate` last, true or false, as in the API's CSV results. */
export const CSV_COLUMNS: readonly (keyof CliRecord)[] = [
  ...LEADING_COLUMNS,
  ...DETAILED_FIELDS.filter((field) => !(LEADING_COLUMNS as readonly string[]).includes(field)),
  'duplicate',
];

/** The CSV's first line, as csv-stringify writes it. */
export const CSV_HEADER = stringify([[...CSV_COLUMNS]]);

/**
 * A spreadsheet runs a cell that starts with one of these as a formula (OWASP, "CSV
 * Injection"): `=HYPERLINK(...)@x.org` is a valid address, and lists come from web forms.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

/** The cell as text a spreadsheet shows, never runs: a leading `'` where it would be a formula. */
function inert(text: string): string {
  return FORMULA_START.test(text) ? `'${text}` : text;
}

/**
 * CSV (RFC 4180, via csv-stringify): risk factors joined by `;`, the error as its code and
 * message, a flag whose check did not run left empty, and a text cell that a spreadsheet would
 * run as a formula prefixed with `'` (NDJSON carries the text as it came). `escape` rewrites
 * text for a terminal when the CSV goes to one.
 */
export function csvFormat(escape: (text: string) => string = (text) => text): RecordFormat {
  return {
    name: 'csv',
    header: CSV_HEADER,
    inputAsRead: (input) => escape(inert(input)),
    line(record) {
      const cells = CSV_COLUMNS.map((column) => {
        const value = record[column];
        if (column === 'duplicate') return String(value === true);
        if (column === 'risk_factors') return (value as string[]).join(';');
        if (column === 'error') {
          return record.error === null ? '' : `${record.error.code}: ${record.error.message}`;
        }
        if (value === null) return '';
        return typeof value === 'string' ? escape(inert(value)) : String(value);
      });
      return stringify([cells]);
    },
  };
}
