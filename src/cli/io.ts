import type { Readable, Writable } from 'node:stream';

/** The streams and signals a command uses: the process's, or a test's. */
export interface CliIo {
  readonly stdout: Writable & { readonly isTTY?: boolean };
  readonly stderr: Writable & { readonly isTTY?: boolean };
  readonly stdin: Readable;
  /** Registers what Ctrl-C does while a command runs; returns the way to unregister it. */
  onInterrupt(handler: () => void): () => void;
}

/** The process's own streams and its SIGINT. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    onInterrupt(handler) {
      let presses = 0;
      // The first Ctrl-C lets the command write what it has; a second one does not wait.
      const onSignal = () => (++presses > 1 ? process.exit(130) : handler());
      process.on('SIGINT', onSignal);
      return () => process.off('SIGINT', onSignal);
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
