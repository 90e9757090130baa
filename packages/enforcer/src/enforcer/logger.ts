/**
 * What the runtime logs: a few lines about its own state (a snapshot applied or refused, Redis
 * lost and back), never one per request. Pass your own to route them into the gateway's logging.
 */

export type LogLevel = "info" | "warn" | "error";

/** A structured logger: a message and flat fields. */
export interface EnforcerLogger {
  log(level: LogLevel, message: string, fields?: Readonly<Record<string, unknown>>): void;
}

/** One JSON line per entry on stderr: `{"level":"warn","msg":"...","enforcerId":"...",...}`. */
export function jsonLineLogger(
  constantFields: Readonly<Record<string, unknown>> = {},
  write: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): EnforcerLogger {
  return {
    log(level, message, fields = {}) {
      write(
        JSON.stringify({
          level,
          msg: message,
          at: new Date().toISOString(),
          ...constantFields,
          ...fields,
        }),
      );
    },
  };
}

/** Drops everything (tests, benchmarks). */
export const silentLogger: EnforcerLogger = { log() {} };

/** A short, single-line description of a thrown value for a log field. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message.split("\n")[0] ?? error.name;
  return String(error);
}
