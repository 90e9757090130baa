import { randomBytes } from "node:crypto";
import { hasForbiddenCharacter } from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../auth/password";
import { ROLES, type Role } from "../auth/roles";
import { textField } from "../change-context";
import { AppError, notFound } from "../errors";
import type { Db } from "../stored";
import { auditView, isoOf } from "../stored";
import type { VersionedEntity } from "../versioned-write";

/** Trimmed and lower-cased, so one address is one account however it is typed. */
export const ZOperatorEmail = z
  .string({
    error: (issue) => (issue.input === undefined ? "email is required" : "email must be text"),
  })
  .trim()
  .toLowerCase()
  .max(254, { error: "email must be at most 254 characters" })
  .regex(/^[^\s@"<>()[\]\\,;:]+@[^\s@"<>()[\]\\,;:]+\.[^\s@"<>()[\]\\,;:]+$/, {
    error: "email must be an address like ada@example.com",
  })
  .refine((value) => !hasForbiddenCharacter(value), {
    error: "email must not contain control or bidirectional formatting characters",
  });

export const ZOperatorName = textField("name", 200);

export const ZRole = z.enum(ROLES, { error: `role must be one of: ${ROLES.join(", ")}` });

/**
 * A password a person chooses. Long rather than complicated (NIST SP 800-63B): at least 12
 * characters, at most 256 (longer ones are refused before hashing); no control or invisible
 * formatting characters, which no keyboard types and which would only hide what was set.
 */
export const ZNewPassword = z
  .string({
    error: (issue) =>
      issue.input === undefined ? "password is required" : "password must be text",
  })
  .min(MIN_PASSWORD_LENGTH, {
    error: `password must be at least ${MIN_PASSWORD_LENGTH} characters`,
  })
  .max(MAX_PASSWORD_LENGTH, { error: `password must be at most ${MAX_PASSWORD_LENGTH} characters` })
  .refine((value) => !hasForbiddenCharacter(value), {
    error:
      "password must not contain control characters or invisible formatting characters (line breaks, tabs, direction marks)",
  });

/** Every column except the password hash, which no record ever carries. */
export const operatorSelect = {
  id: true,
  email: true,
  name: true,
  role: true,
  disabledAt: true,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.OperatorSelect;

type OperatorRow = Prisma.OperatorGetPayload<{ select: typeof operatorSelect }>;

export interface OperatorRecord {
  readonly id: string;
  readonly email: string;
  readonly name: string;
  readonly role: Role;
  /** Null while the operator may sign in. */
  readonly disabledAt: string | null;
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export function toOperatorRecord(row: OperatorRow): OperatorRecord {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    disabledAt: row.disabledAt === null ? null : isoOf(row.disabledAt),
    version: row.version,
    createdAt: isoOf(row.createdAt),
    updatedAt: isoOf(row.updatedAt),
  };
}

export function operatorLabel(operator: { readonly email: string }): string {
  return `operator ${operator.email}`;
}

export function newOperatorId(): string {
  return `op_${randomBytes(8).toString("hex")}`;
}

/** A strong password for a person to change: 24 characters, 144 bits. */
export function generatePassword(): string {
  return randomBytes(18).toString("base64url");
}

export async function findOperator(db: Db, id: string): Promise<OperatorRecord> {
  const row = await db.operator.findUnique({ where: { id }, select: operatorSelect });
  if (row === null) throw notFound("Operator", id);
  return toOperatorRecord(row);
}

/** An operator as `versionedWrite` reads, checks and records it (never the password hash). */
export function operatorEntity(id: string): VersionedEntity<OperatorRecord> {
  return {
    find: (tx) => findOperator(tx, id),
    entityType: "operator",
    entityId: id,
    label: operatorLabel,
    view: auditView,
  };
}

/** Operator ids as services accept them (a path parameter, usually). */
export const ZOperatorId = z
  .string({ error: "id must be text" })
  .regex(/^op_[0-9a-f]{16}$/, { error: "id must be an operator id like op_0123456789abcdef" });

/**
 * Refuses a change that would leave no enabled admin: nobody could then manage operators or
 * tokens. Call with the operator-change lock held, after the change is written.
 */
export async function assertAnEnabledAdminRemains(db: Db): Promise<void> {
  const admins = await db.operator.count({ where: { role: "admin", disabledAt: null } });
  if (admins === 0) {
    throw new AppError(
      "CONFLICT",
      "This would leave no enabled admin, and nobody could manage operators or tokens. Make another operator an admin first.",
    );
  }
}

/** Revokes every live session of an operator; returns how many. */
export async function revokeOperatorSessions(
  db: Db,
  operatorId: string,
  nowMs: number,
  exceptSessionId: string | null = null,
): Promise<number> {
  const result = await db.session.updateMany({
    where: {
      operatorId,
      revokedAt: null,
      expiresAt: { gt: new Date(nowMs) },
      ...(exceptSessionId === null ? {} : { id: { not: exceptSessionId } }),
    },
    data: { revokedAt: new Date(nowMs) },
  });
  return result.count;
}
