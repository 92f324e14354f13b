#!/usr/bin/env node
import { EXIT } from './exit-codes.js';
import { main } from './main.js';
import { escapeForTerminal } from './terminal.js';

// A reader that goes away (`mailverdict batch list.txt | head -1`) ends the run quietly with
// exit 0, as ripgrep does: there is no one left to write for, and a stack trace about it
// would be noise. Any other failure to write (a full disk) is one line and exit 4.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') {
    process.stderr.write(`mailverdict: cannot write the output: ${error.message}\n`);
  }
  process.exit(error.code === 'EPIPE' ? EXIT.ok : EXIT.failure);
});
// Where stderr itself is gone, there is nowhere to say anything.
process.stderr.on('error', () => {});

// The engine warns through process.emitWarning (a resolver that lies, SMTP defaults); Node
// would print `(node:1234) MailverdictDns: ...` and a hint about --trace-warnings. A CLI
// says it in its own name, on one line.
process.removeAllListeners('warning');
process.on('warning', (warning) => {
  process.stderr.write(`mailverdict: warning: ${escapeForTerminal(warning.message)}\n`);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`mailverdict: ${(error as Error).message}\n`);
    process.exitCode = EXIT.failure;
  },
);
