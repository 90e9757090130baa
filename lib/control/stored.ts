/**
 * Boundary parsing of what Postgres returns: JSON columns are parsed with the @limitplane/enforcer/policy schemas
 * whenever they are read. A row that fails is not the caller's mistake but damage (or a bug), so
 * it throws a plain Error (a 500), naming the row and the problem.
 */

import { fieldErrorsFromZod, formatFieldErrors } from "@limitplane/enforcer/policy";
import type { z } from "zod";
import { Prisma, type PrismaClient } from "@/lib/generated/prisma/client";

/** The client or a transaction: what record helpers and reads run against. */
export type Db = PrismaClient | Prisma.TransactionClient;

export function parseStored<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  label: string,
): z.output<Schema> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new Error(
    `The stored ${label} is invalid: ${formatFieldErrors(fieldErrorsFromZod(result.error)).replaceAll("\n", "; ")}`,
  );
}

/**
 * A value for a JSON column: what JSON keeps of it (undefined fields dropped, dates as ISO text).
 * The round trip is what makes the assertion true.
 */
export function toJson(value: object): Prisma.InputJsonValue {
  return JSON.parse(JSON.stringify(value)) as Prisma.InputJsonValue;
}

/** A nullable JSON column: SQL NULL for null or undefined. */
export function jsonColumn(value: unknown): Prisma.InputJsonValue | typeof Prisma.DbNull {
  return typeof value === "object" && value !== null ? toJson(value) : Prisma.DbNull;
}

export function isoOf(date: Date): string {
  return date.toISOString();
}

/** A record as its audit entries show it: every field but the timestamps (noise in a diff). */
export function auditView<
  Record extends { readonly createdAt: string; readonly updatedAt: string },
>(record: Record): Omit<Record, "createdAt" | "updatedAt"> {
  const { createdAt: _createdAt, updatedAt: _updatedAt, ...view } = record;
  return view;
}
