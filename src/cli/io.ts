import { fstatSync, readlinkSync, statSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
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
  /**
   * The regular file standard output was redirected to (`> out.ndjson`), when the system
   * tells (Linux's /proc); undefined for a pipe, a terminal, or where it cannot be known.
   */
  outputFile?(): string | undefined;
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
    outputFile: () => redirectedFile(1),
  };
}

/**
 * The regular file a descriptor writes to, named relative to the working directory when it is
 * below it: /proc/self/fd names it, and the name is believed only while it still leads to the
 * same file (one renamed or deleted since is not named).
 */
function redirectedFile(fd: number): string | undefined {
  try {
    const open = fstatSync(fd);
    if (!open.isFile()) return undefined;
    const path = readlinkSync(`/proc/self/fd/${fd}`);
    const named = statSync(path);
    if (named.ino !== open.ino || named.dev !== open.dev) return undefined;
    const below = relative(process.cwd(), path);
    return below === '' || below.startsWith('..') || isAbsolute(below) ? path : below;
  } catch {
    return undefined;
  }
}

/** Writes text, waiting when the stream asks us to (a slow pipe must not fill our memory). */
export function write(stream: Writable, text: string): Promise<void> | undefined {
  if (text === '' || stream.write(text)) return undefined;
  return new Promise((resolve) => stream.once('drain', resolve));
}

export function line(stream: Writable, text: string): void {
  stream.write(`${text}\n`);
}

/** Why a file could not be opened, in words (the errno code is for programs). */
export function reasonOf(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'a directory';
  return (error as Error).message;
}
