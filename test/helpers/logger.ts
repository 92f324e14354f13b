import type { LogFields, Logger, LogLevel } from '../../src/ports/logger.js';

/** One line a recording logger was given. */
export interface LogLine {
  readonly level: LogLevel;
  readonly fields: LogFields;
  readonly message: string;
}

/** A logger port that keeps every line, for tests to read: `lines`, or those of one event. */
export function recordingLogger(): Logger & {
  readonly lines: LogLine[];
  events(event: string): LogLine[];
} {
  const lines: LogLine[] = [];
  const at =
    (level: LogLevel) =>
    (fields: LogFields, message: string): void => {
      lines.push({ level, fields, message });
    };
  return {
    lines,
    events: (event) => lines.filter((line) => line.fields.event === event),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  };
}

/** The JSON lines of a process's stderr (pino's), each parsed; other lines are skipped. */
export function jsonLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
