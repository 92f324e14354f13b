/**
 * The CLI's exit codes (README: "Exit codes"). A command says whether its job succeeded;
 * `verify --strict` also says the worst verdict, so that a shell can branch on it.
 */
export const EXIT = Object.freeze({
  /**
   * Done: every address has a verdict (verify), the job completed (batch, admin); also a run
   * whose reader went away (`| head -1`), as ripgrep exits.
   */
  ok: 0,
  /** verify --strict: at least one address is undeliverable. */
  undeliverable: 1,
  /**
   * Bad usage: unknown flags, a missing argument, unreadable or malformed input, a refusal of
   * the service, and what a flag fixes at start-up (a port in use, a --db that cannot open).
   */
  usage: 2,
  /** verify --strict: at least one address is risky, none undeliverable. */
  risky: 3,
  /** The run failed: a store or another unexpected error (the message says which). */
  failure: 4,
  /**
   * Interrupted by Ctrl-C (SIGINT): what was done is written, the rest is not, and stderr shows
   * the `batch --resume` command that goes on (128 + 2).
   */
  interrupted: 130,
  /** Stopped by SIGTERM (a service manager, `kill`): as for Ctrl-C, but 128 + 15. */
  terminated: 143,
});

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A mistake in how the CLI was called or in its input: one line on stderr and exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
