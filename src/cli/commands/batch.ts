import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { SingleBar } from 'cli-progress';
import { parseAddress } from '../../address/parse.js';
import { createEngine } from '../../compose/engine.js';
import { toResultRecord, type ResultRecord } from '../../format/shapes.js';
import { repeatFinder } from '../../service/batch/repeats.js';
import { concurrencyOf, engineOptionsOf, methodOf, type EngineFlags } from '../engine-options.js';
import { EXIT, UsageError, type ExitCode } from '../exit-codes.js';
import { readCsvColumn, readLines, type InputItem } from '../input.js';
import { exitCodeOf, line, write, type CliIo, type StopSignal } from '../io.js';
import { cliRecordOf, csvFormat, NDJSON, type CliRecord, type RecordFormat } from '../records.js';
import { remoteOf, remoteResults, type RemoteFlags } from '../remote.js';
import { escapeForTerminal } from '../terminal.js';

export interface BatchFlags extends EngineFlags, RemoteFlags {
  readonly output: string;
  readonly csv?: boolean;
  readonly column?: string;
  readonly progress?: boolean;
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
 * is done before it stops. With `--server`, the list goes to that server in jobs of up to
 * 50,000 addresses, and each job's records are written as they stream back: through the same
 * record builder, so that the output is the same.
 */
export async function batchCommand(
  source: string,
  flags: BatchFlags,
  io: CliIo,
): Promise<ExitCode> {
  const method = methodOf(flags);
  const controller = new AbortController();
  const client = remoteOf(flags, controller.signal);
  const format = formatOf(flags.output, io.stdout.isTTY === true);
  const concurrency = concurrencyOf(flags);
  const input = await openInput(source, io);
  // --column names a CSV column: it means CSV whatever the file is called.
  const csv =
    flags.csv === true || flags.column !== undefined || source.toLowerCase().endsWith('.csv');
  const items = csv ? readCsvColumn(input.stream, flags.column) : readLines(input.stream);
  const verifier =
    client === undefined
      ? ({ kind: 'local', engine: createEngine(engineOptionsOf(flags)) } as const)
      : ({ kind: 'remote', client } as const);
  const parse = verifier.kind === 'local' ? verifier.engine.parse : parseAddress;

  const stopOnInterrupt = io.onInterrupt((signal) => {
    controller.abort(new Interrupted(signal));
    // A read of standard input still open (a pipe whose writer waits) would hold the run
    // until its next line: the input ends here, and the run stops at its next step.
    input.stream.destroy();
  });
  const bar = progressBar(io, flags.progress !== false, input.total);
  const summary = new Summary();
  // By position in what verifyMany reads: the items read and not yet verified, and the
  // records verified and not yet written.
  const reading = new Map<number, { index: number; duplicate: boolean }>();
  const waiting = new Map<number, CliRecord>();
  const earlierOf = repeatFinder();
  let nextToWrite = 0;
  let read = 0;

  async function* addresses(): AsyncGenerator<string> {
    for await (const item of items as AsyncIterable<InputItem>) {
      const repeat = earlierOf(item.address, parse(item.address), item.index);
      reading.set(read++, { index: item.index, duplicate: repeat !== undefined });
      yield item.address;
    }
  }
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
      await write(io.stdout, format.line(record));
    }
  };

  /** One address's record is in, verified here or by the server: written once its turn comes. */
  const land = async (position: number, input: string, record: ResultRecord) => {
    summary.add(record);
    const item = reading.get(position) as { index: number; duplicate: boolean };
    reading.delete(position);
    waiting.set(
      position,
      cliRecordOf({ index: item.index, input, duplicate: item.duplicate }, record),
    );
    if (position === nextToWrite) await flush(false);
  };

  let outcome: ExitCode = EXIT.ok;
  try {
    await write(io.stdout, format.header);
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
    await flush(true);
  }
  for (const text of summary.lines(outcome !== EXIT.ok, read)) line(io.stderr, text);
  return outcome;
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

/** Why a file could not be opened, in words (the errno code is for programs). */
function reasonOf(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return (error as Error).message;
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
