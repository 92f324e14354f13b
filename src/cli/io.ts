import type { Readable, Writable } from 'node:stream';
import { EXIT, type ExitCode } from './exit-codes.js';

/** The streams and signals a command uses: the process's, or a test's. */
export interface CliIo {
  readonly stdout: Writable & { readonly isTTY?: boolean };
  readonly stderr: Writable & { readonly isTTY?: boolean };
  readonly stdin: Readable;
  /**
   * Registers what Ctrl-C (SIGINT) and SIGTERM do while a command runs; returns the way to
   * unregister it. The handler is told which signal came.
   */
  onInterrupt(handler: (signal: StopSignal) => void): () => void;
}

export type StopSignal = 'SIGINT' | 'SIGTERM';

/** The exit code of a run a signal stopped: 128 + its number, as shells report it. */
export function exitCodeOf(signal: StopSignal): ExitCode {
  return signal === 'SIGINT' ? EXIT.interrupted : EXIT.terminated;
}

/** The process's own streams, and its SIGINT and SIGTERM. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    onInterrupt(handler) {
      let presses = 0;
      // The first signal lets the command write what it has; a second one does not wait.
      const onSignal = (signal: StopSignal) =>
        ++presses > 1 ? process.exit(exitCodeOf(signal)) : handler(signal);
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      return () => {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      };
    },
  };
}

/** Writes text, waiting when the stream asks us to (a slow pipe must not fill our memory). */
export function write(stream: Writable, text: string): Promise<void> | undefined {
  if (text === '' || stream.write(text)) return undefined;
  return new Promise((resolve) => stream.once('drain', resolve));
}

export function line(stream: Writable, text: string): void {
  stream.write(`${text}\n`);
}
