import { stringify } from 'csv-stringify/sync';
import type { Verdict } from '../engine/verdict.js';
import { DETAILED_FIELDS, toDetailed, type DetailedResult } from '../format/shapes.js';
import { safeJson } from './terminal.js';

/**
 * What the CLI writes for one address: where it was in the input, the input as given, the
 * verdict, and why; `duplicate: true` (as in the API's results) when it repeats an earlier
 * address of the same run.
 */
export interface CliRecord extends DetailedResult {
  /** The input line, or the CSV row (a header is row 1), 1-based; an argument's position. */
  index: number;
  input: string;
  risk_factors: string[];
  error: { code: string; message: string } | null;
  duplicate?: true;
}

export function recordOf(verdict: Verdict, index: number, duplicate = false): CliRecord {
  return {
    index,
    input: verdict.input,
    ...toDetailed(verdict),
    risk_factors: [...verdict.riskFactors],
    error: verdict.error === null ? null : { ...verdict.error },
    ...(duplicate ? { duplicate: true as const } : {}),
  };
}

/** One output format: a header (CSV) and a line per record, each ending in a newline. */
export interface RecordFormat {
  readonly header: string;
  line(record: CliRecord): string;
}

/** NDJSON: one JSON object a line, with no raw terminal controls (see safeJson). */
export const NDJSON: RecordFormat = {
  header: '',
  line: (record) => `${safeJson(record)}\n`,
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
    header: stringify([[...CSV_COLUMNS]]),
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
