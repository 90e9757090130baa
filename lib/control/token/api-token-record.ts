import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import type { Role } from "../auth/roles";
import { textField } from "../change-context";
import { notFound } from "../errors";
import type { Db } from "../policy/stored-policy";
import { isoOf } from "../stored";

export const ZApiTokenName = textField("name", 100);

export const ZApiTokenId = z
  .string({ error: "id must be text" })
  .regex(/^tok_[0-9a-f]{16}$/, { error: "id must be a token id like tok_0123456789abcdef" });

/** Every column except the token's hash. */
export const apiTokenSelect = {
  id: true,
  name: true,
  prefix: true,
  role: true,
  createdById: true,
  createdByName: true,
  createdAt: true,
  expiresAt: true,
  revokedAt: true,
  lastUsedAt: true,
  version: true,
} satisfies Prisma.ApiTokenSelect;

type ApiTokenRow = Prisma.ApiTokenGetPayload<{ select: typeof apiTokenSelect }>;

/** Where a token stands at a given instant. */
export type ApiTokenState = "active" | "expired" | "revoked";

export interface ApiTokenRecord {
  readonly id: string;
  readonly name: string;
  /** `lp_` and 8 characters: the start of the token, enough to recognise it. */
  readonly prefix: string;
  readonly role: Role;
  readonly createdBy: { readonly id: string | null; readonly name: string };
  readonly createdAt: string;
  /** Null: it never expires. */
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
  /** Exact to a minute; null when never used. */
  readonly lastUsedAt: string | null;
  readonly version: number;
  readonly state: ApiTokenState;
}

export function apiTokenState(
  row: { readonly expiresAt: Date | null; readonly revokedAt: Date | null },
  nowMs: number,
): ApiTokenState {
  if (row.revokedAt !== null) return "revoked";
  return row.expiresAt !== null && row.expiresAt.getTime() <= nowMs ? "expired" : "active";
}

export function toApiTokenRecord(row: ApiTokenRow, nowMs: number): ApiTokenRecord {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    role: row.role,
    createdBy: { id: row.createdById, name: row.createdByName },
    createdAt: isoOf(row.createdAt),
    expiresAt: row.expiresAt === null ? null : isoOf(row.expiresAt),
    revokedAt: row.revokedAt === null ? null : isoOf(row.revokedAt),
    lastUsedAt: row.lastUsedAt === null ? null : isoOf(row.lastUsedAt),
    version: row.version,
    state: apiTokenState(row, nowMs),
  };
}

/** What a token's audit entries show: the record without the volatile fields. */
export function apiTokenAuditView(record: ApiTokenRecord) {
  const { lastUsedAt: _lastUsedAt, state: _state, ...view } = record;
  return view;
}

export function apiTokenLabel(token: { readonly name: string; readonly prefix: string }): string {
  return `API token "${token.name}" (${token.prefix})`;
}

export function newApiTokenId(): string {
  return `tok_${randomBytes(8).toString("hex")}`;
}

export async function findApiToken(db: Db, id: string, nowMs: number): Promise<ApiTokenRecord> {
  const row = await db.apiToken.findUnique({ where: { id }, select: apiTokenSelect });
  if (row === null) throw notFound("API token", id);
  return toApiTokenRecord(row, nowMs);
}
