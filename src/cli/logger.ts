import type { Writable } from 'node:stream';
import { LOG_LEVELS, type Logger, type LogLevel } from '../ports/logger.js';
import { UsageError } from './exit-codes.js';

/** What `--log-level` takes: the port's levels, and `silent` for none at all. */
export const CLI_LOG_LEVELS = [...LOG_LEVELS, 'silent'] as const;
export type CliLogLevel = (typeof CLI_LOG_LEVELS)[number];

/** The default of `--log-level`: start-up, each job's life, webhooks, errors. */
export const DEFAULT_LOG_LEVEL: LogLevel = 'info';

/**
 * The logger of `serve` and `worker`: pino, one JSON object a line on `stream` (stderr), each
 * with its level by name, an ISO 8601 time, the process id and host name, then the line's
 * fields and its `msg`. pino because it is well kept, fast (it does not hold the request
 * loop: a line is a few microseconds), writes exactly JSON lines, and has levels; and its
 * `(fields, message)` calls are the logger port's, so the service and the handler take it as
 * it is. Written synchronously: a line is on stderr before the process can exit. Loaded here
 * only: the commands that write no log (verify, batch, the admin ones) never load pino.
 */
export async function cliLogger(level: string | undefined, stream: Writable): Promise<Logger> {
  const chosen = level ?? DEFAULT_LOG_LEVEL;
  if (!(CLI_LOG_LEVELS as readonly string[]).includes(chosen)) {
    throw new UsageError(
      `--log-level must be one of ${CLI_LOG_LEVELS.join(', ')}, got ${JSON.stringify(chosen)}`,
    );
  }
  const { pino } = await import('pino');
  const logger: Logger = pino(
    {
      level: chosen,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    stream,
  );
  return logger;
}
