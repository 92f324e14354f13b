import { stringify } from 'csv-stringify/sync';
import type { Verdict } from '../engine/verdict.js';
import { DETAILED_FIELDS, toDetailed, type DetailedResult } from '../format/shapes.js';
import { safeJson } from './terminal.js';

/** What the CLI writes for one address: the input as given, the verdict, and why. */
export interface CliRecord extends DetailedResult {
  input: string;
  risk_factors: string[];
  error: { code: string; message: string } | null;
}

export function recordOf(verdict: Verdict): CliRecord {
  return {
    input: verdict.input,
    ...toDetailed(verdict),
    risk_factors: [...verdict.riskFactors],
    error: verdict.error === null ? null : { ...verdict.error },
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
  'input',
  'email',
  'state',
  'reason',
  'score',
  'risk_factors',
  'error',
] as const;
const CSV_COLUMNS: readonly (keyof CliRecord)[] = [
  ...LEADING_COLUMNS,
  ...DETAILED_FIELDS.filter((field) => !(LEADING_COLUMNS as readonly string[]).includes(field)),
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
