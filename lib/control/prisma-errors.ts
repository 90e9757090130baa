/**
 * The one place that reads Prisma's error codes. Services translate what a caller can act on into
 * `AppError`; anything else propagates unchanged (a bug, or the database being down).
 *
 * With the `pg` driver adapter, Prisma reports the Postgres error in
 * `meta.driverAdapterError.cause` (`originalCode`, `kind`, `constraint.index`).
 */
import { z } from "zod";
import { Prisma } from "@/lib/generated/prisma/client";
import { AppError } from "./errors";

/** What the failing statement was about, for messages a person can act on. */
export interface DbErrorSubject {
  /** "tier", "customer"... */
  readonly entity: string;
  /** The key the caller gave, e.g. the tier's name. */
  readonly key: string;
  /** The input field that holds the key. @default "name" */
  readonly field?: string;
}

const ZDriverAdapterError = z.object({
  cause: z.object({
    originalCode: z.string().optional(),
    kind: z.string().optional(),
    constraint: z.object({ index: z.string().optional() }).optional(),
  }),
});
type DriverCause = z.output<typeof ZDriverAdapterError>["cause"];

function driverCause(error: Prisma.PrismaClientKnownRequestError): DriverCause {
  const parsed = ZDriverAdapterError.safeParse(error.meta?.driverAdapterError);
  return parsed.success ? parsed.data.cause : {};
}

/**
 * Whether retrying the whole transaction may succeed: a serialization failure or a deadlock.
 * Policy changes serialise on an advisory lock at READ COMMITTED, so these are rare; they are
 * retried rather than shown.
 */
export function isRetryableTransactionError(error: unknown): boolean {
  if (!(error instanceof Prisma.PrismaClientKnownRequestError)) return false;
  if (error.code === "P2034") return true;
  const cause = driverCause(error);
  return (
    cause.kind === "TransactionWriteConflict" ||
    cause.originalCode === "40001" ||
    cause.originalCode === "40P01"
  );
}

/**
 * `error` as an `AppError` when Prisma reports something the caller can act on: a duplicate key
 * (P2002, CONFLICT naming the field), a missing row (P2025, NOT_FOUND) or a row still referenced
 * (P2003, CONFLICT). Anything else is returned unchanged, for the caller to rethrow.
 */
export function translateDbError(error: unknown, subject: DbErrorSubject): unknown {
  if (error instanceof AppError || !(error instanceof Prisma.PrismaClientKnownRequestError)) {
    return error;
  }
  const field = subject.field ?? "name";
  switch (error.code) {
    case "P2002":
      return new AppError(
        "CONFLICT",
        `${subject.entity} "${subject.key}" already exists; choose another ${field} or edit the existing one.`,
        {
          fieldErrors: [{ path: field, message: `"${subject.key}" is already taken` }],
          cause: error,
        },
      );
    case "P2025":
      return new AppError("NOT_FOUND", `${subject.entity} "${subject.key}" does not exist.`, {
        details: { entity: subject.entity, id: subject.key },
        cause: error,
      });
    case "P2003": {
      const constraint = driverCause(error).constraint?.index ?? "a reference";
      return new AppError(
        "CONFLICT",
        `${subject.entity} "${subject.key}" is still referenced (${constraint}); remove what refers to it first.`,
        { cause: error },
      );
    }
    default:
      return error;
  }
}

/** Driver-adapter kinds and Prisma codes that mean "Postgres is not answering", not a bug. */
const UNREACHABLE_KINDS = new Set([
  "DatabaseNotReachable",
  "ConnectionClosed",
  "SocketTimeout",
  "TooManyConnections",
]);
const UNREACHABLE_CODES = new Set(["P1001", "P1002", "P1008", "P1017", "P2024"]);
/** Postgres itself: the server is shutting down, starting up, or out of connections. */
const UNREACHABLE_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);

/**
 * What node-postgres says, with no code, when a server accepts the connection and never answers
 * (a hung database, a partition): the connection timeout (lib/server/db.ts), a pool checkout that
 * timed out, a connection that died mid-handshake. The messages are pg's own (pg and pg-pool).
 */
const UNANSWERED_MESSAGES = [
  "Connection terminated due to connection timeout",
  "timeout exceeded when trying to connect",
  "Connection terminated unexpectedly",
];

/**
 * Whether `error` says the database cannot be reached now (refused, timed out, unanswered,
 * closed, shutting down): a 503 DATABASE_UNAVAILABLE to retry, not a 500 to report.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof Prisma.PrismaClientKnownRequestError) {
    if (UNREACHABLE_CODES.has(error.code)) return true;
    const cause = driverCause(error);
    return (
      (cause.kind !== undefined && UNREACHABLE_KINDS.has(cause.kind)) ||
      (cause.originalCode !== undefined && UNREACHABLE_SQLSTATES.has(cause.originalCode))
    );
  }
  if (error instanceof Prisma.PrismaClientInitializationError) return true;
  if (
    error instanceof Error &&
    error.constructor === Error &&
    UNANSWERED_MESSAGES.includes(error.message)
  ) {
    return true;
  }
  const code = (error as { code?: unknown } | null)?.code;
  return (
    typeof code === "string" &&
    (["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND"].includes(code) ||
      UNREACHABLE_SQLSTATES.has(code))
  );
}
