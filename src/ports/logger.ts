/**
 * The fields of one log line besides its message: JSON values named in snake_case, as the API's
 * wire objects are. Never a secret (an API key, a webhook secret), never an address verified.
 */
export type LogFields = Readonly<Record<string, unknown>>;

/** The levels a line is written at, most verbose first. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The logger port: one structured line per call, its fields first, then its message, as pino
 * and bunyan take them, so that a pino logger is one as it is. The service, the HTTP handler and
 * the batch work write their lines through it when they are given one, and say nothing when
 * they are not: a library stays quiet unless its host asks. Every call is synchronous and must
 * not throw. An `err` field holds an Error: its message and stack are for the log, never for a
 * client.
 */
export interface Logger {
  debug(fields: LogFields, message: string): void;
  info(fields: LogFields, message: string): void;
  warn(fields: LogFields, message: string): void;
  error(fields: LogFields, message: string): void;
}

/** The logger of a host that gave none: every line dropped. */
export const silentLogger: Logger = Object.freeze({
  debug() {},
  info() {},
  warn() {},
  error() {},
});
