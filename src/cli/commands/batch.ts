import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { SingleBar } from 'cli-progress';
import { parseAddress } from '../../address/parse.js';
import { createEngine } from '../../compose/engine.js';
import { toResultRecord, type ResultRecord } from '../../format/shapes.js';
import { concurrencyOf, engineOptionsOf, methodOf, type EngineFlags } from '../engine-options.js';
import { EXIT, UsageError, type ExitCode } from '../exit-codes.js';
import { markRepeats, readList, type MarkedItem } from '../input.js';
import { exitCodeOf, line, reasonOf, write, type CliIo, type StopSignal } from '../io.js';
import { cliRecordOf, csvFormat, NDJSON, type CliRecord, type RecordFormat } from '../records.js';
import { remoteOf, remoteResults, type RemoteFlags } from '../remote.js';
import {
  appendTo,
  missingItems,
  readEarlierOutput,
  type EarlierOutput,
  type RecordSink,
  type ResumePlan,
} from '../resume.js';
import { escapeForTerminal } from '../terminal.js';

export interface BatchFlags extends EngineFlags, RemoteFlags {
  readonly output: string;
  readonly csv?: boolean;
  readonly column?: string;
  readonly progress?: boolean;
  /** An earlier run's output file: verify only what it has no record of, and append. */
  readonly resume?: string;
}

/** Stands for Ctrl-C or SIGTERM in the run's signal: told apart from other failures. */
class Interrupted extends Error {
  override readonly name = 'Interrupted';
  constructor(readonly signal: StopSignal) {
    super(`interrupted by ${signal}`);
  }
}

/**
 * `mailverdict batch <file|->`: streams a list through verifyMany, writing each record as
 * soon as every earlier one is written (input order, a window no larger than the work in
 * flight), with a progress bar on a terminal, a summary at the end, and Ctrl-C writing what
 * is done before it stops and saying how to go on. With `--resume <file>`, the records go to
 * the end of that earlier output, for the addresses it has no record of. With `--server`, the
 * list goes to that server in jobs of up to 50,000 addresses, and each job's records are
 * written as they stream back: through the same record builder, so that the output is the
 * same. `args` are the command's own, replayed in the `--resume` command the summary shows.
 */
export async function batchCommand(
  source: string,
  flags: BatchFlags,
  io: CliIo,
  args: readonly string[] = ['batch', source],
): Promise<ExitCode> {
  const method = methodOf(flags);
  const controller = new AbortController();
  const client = remoteOf(flags, controller.signal);
  const resuming = flags.resume !== undefined;
  const recordsOnTerminal = !resuming && io.stdout.isTTY === true;
  const format = formatOf(flags.output, recordsOnTerminal);
  const concurrency = concurrencyOf(flags);
  const verifier =
    client === undefined
      ? ({ kind: 'local', engine: createEngine(engineOptionsOf(flags)) } as const)
      : ({ kind: 'remote', client } as const);
  const parse = verifier.kind === 'local' ? verifier.engine.parse : parseAddress;
  const earlier =
    flags.resume === undefined ? undefined : await readEarlierOutput(flags.resume, format);
  const input = await openInput(source, io);
  const named = source === '-' ? 'standard input' : JSON.stringify(source);

  const stopOnInterrupt = io.onInterrupt((signal) => {
    controller.abort(new Interrupted(signal));
    // A read of standard input still open (a pipe whose writer waits) would hold the run
    // until its next line: the input ends here, and the run stops at its next step.
    input.stream.destroy();
  });
  const summary = new Summary();
  // By position in what is read: the items read and not yet verified, and the records
  // verified and not yet written.
  const reading = new Map<number, MarkedItem>();
  const waiting = new Map<number, CliRecord>();
  let nextToWrite = 0;
  let read = 0;
  let sink: RecordSink | undefined;
  let bar: SingleBar | undefined;
  let listed = 0;

  const flush = async (all: boolean) => {
    // Input order: a record waits only for earlier ones still in flight; at the end (or on
    // Ctrl-C) whatever is done goes out, in order, past the gaps.
    const order = all ? [...waiting.keys()].sort((a, b) => a - b) : [];
    for (;;) {
      const position = all ? order.shift() : nextToWrite;
      if (position === undefined) break;
      const record = waiting.get(position);
      if (record === undefined) break;
      waiting.delete(position);
      nextToWrite = position + 1;
      await sink?.write(format.line(record));
    }
  };

  /** One address's record is in, verified here or by the server: written once its turn comes. */
  const land = async (position: number, input: string, record: ResultRecord) => {
    summary.add(record);
    const item = reading.get(position) as MarkedItem;
    reading.delete(position);
    waiting.set(
      position,
      cliRecordOf({ index: item.index, input, duplicate: item.duplicate }, record),
    );
    if (position === nextToWrite) await flush(false);
  };

  let outcome: ExitCode = EXIT.ok;
  try {
    // --column names a CSV column: it means CSV whatever the file is called.
    const list = await readList(input.stream, {
      csv:
        flags.csv === true || flags.column !== undefined || source.toLowerCase().endsWith('.csv'),
      column: flags.column,
    });
    if (list.csvBecause !== undefined) {
      line(
        io.stderr,
        escapeForTerminal(
          `mailverdict: reading ${named} as CSV: ${list.csvBecause} (--csv says so)`,
        ),
      );
    }
    const where = (index: number) => `${list.csv ? 'row' : 'line'} ${index} of ${named}`;
    const run =
      earlier === undefined
        ? await wholeList(markRepeats(list.items, parse), format, io, input.total)
        : await missingPart(
            await missingItems(list.items, parse, earlier, format, where),
            earlier,
            format,
            io,
          );
    sink = run.sink;
    listed = run.listed;
    async function* addresses(): AsyncGenerator<string> {
      for await (const item of run.work) {
        reading.set(read++, item);
        yield item.address;
      }
    }
    bar = progressBar(io, flags.progress !== false && !recordsOnTerminal, run.total);
    if (verifier.kind === 'local') {
      for await (const { index, verdict } of verifier.engine.verifyMany(addresses(), {
        method,
        signal: controller.signal,
        ...(concurrency === undefined ? {} : { concurrency }),
      })) {
        await land(index, verdict.input, toResultRecord(verdict));
        bar?.update(summary.count);
      }
    } else {
      // The bar follows the server's progress; the records come once a job is done.
      for await (const { position, input, record } of remoteResults(verifier.client, addresses(), {
        method,
        signal: controller.signal,
        onProgress: (processed) => bar?.update(processed),
        whereIs: (position) => where(reading.get(position)?.index ?? 0),
      })) {
        await land(position, input, record);
      }
    }
  } catch (error) {
    // After a signal, the input's destruction may surface first (a premature close).
    const reason: unknown = controller.signal.reason;
    if (!(reason instanceof Interrupted)) throw error;
    outcome = exitCodeOf(reason.signal);
  } finally {
    stopOnInterrupt();
    // The count was of lines; blank ones and a CSV header are no addresses: a run that read
    // everything ends at 100 %.
    if (outcome === EXIT.ok && bar !== undefined) {
      bar.setTotal(summary.count);
      bar.update(summary.count);
    }
    bar?.stop();
    try {
      await flush(true);
    } finally {
      await sink?.close();
    }
  }
  const interrupted = outcome !== EXIT.ok;
  for (const text of summary.lines(interrupted, read)) line(io.stderr, text);
  if (interrupted) {
    const file = flags.resume ?? io.outputFile?.();
    const stdin = source === '-' ? ' (with the same list on standard input)' : '';
    line(io.stderr, escapeForTerminal(`To go on: ${resumeCommand(args, file)}${stdin}`));
  } else if (earlier !== undefined) {
    line(
      io.stderr,
      escapeForTerminal(
        `${JSON.stringify(earlier.path)} now has a record of each of the ${listed} addresses of ${named}.`,
      ),
    );
  }
  return outcome;
}

/** What a run verifies, where its records go, and how many it has to do (for the bar). */
interface Run {
  readonly work: AsyncIterable<MarkedItem> | Iterable<MarkedItem>;
  readonly sink: RecordSink;
  readonly total: number | undefined;
  /** A resumed run: the addresses of the whole list. */
  readonly listed: number;
}

/** A first run: every address of the list, to standard output after the format's header. */
async function wholeList(
  work: AsyncIterable<MarkedItem>,
  format: RecordFormat,
  io: CliIo,
  lines: number | undefined,
): Promise<Run> {
  // Standard output stays open when the run ends: the process owns it.
  const sink: RecordSink = { write: (text) => write(io.stdout, text), close: async () => {} };
  await sink.write(format.header);
  return { work, sink, total: lines, listed: 0 };
}

/** A resumed run: what the earlier output lacks, appended to it (a cut-off record cut away). */
async function missingPart(
  plan: ResumePlan,
  earlier: EarlierOutput,
  format: RecordFormat,
  io: CliIo,
): Promise<Run> {
  if (earlier.halfWritten) {
    line(
      io.stderr,
      escapeForTerminal(
        `mailverdict: ${JSON.stringify(earlier.path)} ended in a record cut off in mid-write: it is cut away, and its address verified again`,
      ),
    );
  }
  const sink = await appendTo(earlier, format);
  return { work: plan.missing, sink, total: plan.missing.length, listed: plan.total };
}

/** Stands in the `--resume` command for an output file the system would not name. */
const UNNAMED_OUTPUT = '<output file>';

/** Stands in the `--resume` command for an API key given on the command line. */
const KEY_FROM_ENVIRONMENT = '"$MAILVERDICT_API_KEY"';

/**
 * The command that goes on where this run stopped: its own arguments, with `--resume` and the
 * file its records went to unless it had them, each quoted for a POSIX shell. An API key is
 * never printed: `--api-key` reads it from MAILVERDICT_API_KEY instead.
 */
export function resumeCommand(args: readonly string[], file: string | undefined): string {
  const resuming = args.some((arg) => arg === '--resume' || arg.startsWith('--resume='));
  const words = (resuming ? args : [...args, '--resume']).map((arg, i, all) => {
    if (arg.startsWith('--api-key=')) return `--api-key=${KEY_FROM_ENVIRONMENT}`;
    return all[i - 1] === '--api-key' ? KEY_FROM_ENVIRONMENT : shellWord(arg);
  });
  if (!resuming) words.push(file === undefined ? UNNAMED_OUTPUT : shellWord(file));
  return ['mailverdict', ...words].join(' ');
}

/** A word as a POSIX shell reads it back: bare when it is plain, else in single quotes. */
function shellWord(word: string): string {
  if (/^[\w@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, "'\\''")}'`;
}

function formatOf(output: string, toTerminal: boolean): RecordFormat {
  if (output === 'ndjson') return NDJSON;
  if (output === 'csv') return csvFormat(toTerminal ? escapeForTerminal : undefined);
  throw new UsageError(`--output must be ndjson or csv, got ${JSON.stringify(output)}`);
}

/** The list to read: stdin for `-`, else a regular file (its size in lines for the bar). */
async function openInput(source: string, io: CliIo): Promise<{ stream: Readable; total?: number }> {
  if (source === '-') return { stream: io.stdin };
  let handle;
  try {
    // Opened, not only stat()ed: a file we may not read says so here, not as a stack later.
    handle = await open(source, 'r');
  } catch (error) {
    throw new UsageError(`cannot read ${JSON.stringify(source)}: ${reasonOf(error)}`);
  }
  const info = await handle.stat();
  if (info.isDirectory()) {
    await handle.close();
    throw new UsageError(`${JSON.stringify(source)} is a directory, not a list`);
  }
  // A pipe (`<(sort list.txt)`, /dev/stdin) is read like standard input: once, no total.
  if (!info.isFile()) return { stream: handle.createReadStream() };
  const total = await countLines(source);
  return { stream: handle.createReadStream(), total };
}

/**
 * Lines in a file, read once more for the bar's sake: cheap next to verifying them. A file
 * with lone CRs (classic Mac) counts those, as readLines does.
 */
async function countLines(path: string): Promise<number> {
  let newlines = 0;
  let crs = 0;
  let last = 0x0a;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    for (let i = chunk.indexOf(0x0a); i >= 0; i = chunk.indexOf(0x0a, i + 1)) newlines++;
    for (let i = chunk.indexOf(0x0d); i >= 0; i = chunk.indexOf(0x0d, i + 1)) crs++;
    last = chunk[chunk.length - 1] ?? last;
  }
  const lines = newlines > 0 ? newlines : crs;
  return last === 0x0a || last === 0x0d ? lines : lines + 1;
}

/**
 * A bar with rate and ETA on a terminal's stderr; nothing when stderr is piped, nor when the
 * records themselves go to the terminal (the bar would redraw over them: curl's rule for its
 * progress meter).
 */
function progressBar(io: CliIo, wanted: boolean, total: number | undefined): SingleBar | undefined {
  if (!wanted || io.stderr.isTTY !== true || io.stdout.isTTY === true) return undefined;
  const bar = new SingleBar({
    stream: io.stderr as NodeJS.WritableStream,
    format:
      total === undefined
        ? '{value} verified | {speed}/s'
        : '[{bar}] {percentage}% | {value}/{total} | {speed}/s | ETA {eta_formatted}',
    etaBuffer: 1_000,
    fps: 5,
    hideCursor: true,
  });
  const started = Date.now();
  bar.start(total ?? 0, 0, { speed: 0 });
  const update = bar.update.bind(bar);
  bar.update = ((value: number) => {
    const seconds = Math.max((Date.now() - started) / 1000, 0.001);
    update(value, { speed: Math.round(value / seconds) });
  }) as typeof bar.update;
  return bar;
}

/** Counts by state and by reason, for the closing lines. */
class Summary {
  count = 0;
  readonly #states = new Map<string, number>();
  readonly #reasons = new Map<string, number>();
  readonly #started = Date.now();

  add({ state, reason }: ResultRecord): void {
    this.count++;
    this.#states.set(state, (this.#states.get(state) ?? 0) + 1);
    this.#reasons.set(reason, (this.#reasons.get(reason) ?? 0) + 1);
  }

  lines(interrupted: boolean, read: number): string[] {
    const seconds = (Date.now() - this.#started) / 1000;
    const list = (counts: Map<string, number>) =>
      [...counts]
        .sort((a, b) => b[1] - a[1])
        .map(([name, n]) => `${name} ${n}`)
        .join(', ') || 'none';
    const head = interrupted
      ? `Interrupted: ${this.count} of ${read} addresses read were verified and written (${seconds.toFixed(1)} s).`
      : `Verified ${this.count} ${this.count === 1 ? 'address' : 'addresses'} in ${seconds.toFixed(1)} s.`;
    return [head, `By state: ${list(this.#states)}.`, `By reason: ${list(this.#reasons)}.`];
  }
}
