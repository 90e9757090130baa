import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import { type Role, rankOf } from "../auth/roles";
import { textField } from "../change-context";
import { notFound } from "../errors";
import type { Db } from "../stored";
import { isoOf } from "../stored";
import type { VersionedEntity } from "../versioned-write";

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

/**
 * Where a token stands at a given instant. `suspended`: its own fields allow it, but its creator
 * does not (an operator who is disabled or no longer exists, or a token that no longer works);
 * it works again if its creator does.
 */
export type ApiTokenState = "active" | "expired" | "revoked" | "suspended";

/**
 * Who made a token: an operator (through a session), another token, or the command line
 * (`token:create`, `npm run up`), which has no creator to answer to.
 */
export type ApiTokenCreatorKind = "operator" | "token" | "cli";

export interface ApiTokenRecord {
  readonly id: string;
  readonly name: string;
  /** `lp_` and 8 characters: the start of the token, enough to recognise it. */
  readonly prefix: string;
  /** The role it was given. */
  readonly role: Role;
  /**
   * What it may do now: `role`, capped by its creator's current role (a token made by a token,
   * by that token's effective role). Null unless `state` is `active`.
   */
  readonly effectiveRole: Role | null;
  readonly createdBy: {
    readonly kind: ApiTokenCreatorKind;
    readonly id: string | null;
    readonly name: string;
  };
  readonly createdAt: string;
  /** Null: it never expires. */
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
  /** Exact to a minute; null when never used. */
  readonly lastUsedAt: string | null;
  readonly version: number;
  readonly state: ApiTokenState;
}

/** The token's own fields: revoked, expired, or active as far as they say. */
function ownTokenState(
  row: { readonly expiresAt: Date | null; readonly revokedAt: Date | null },
  nowMs: number,
): ApiTokenState {
  if (row.revokedAt !== null) return "revoked";
  return row.expiresAt !== null && row.expiresAt.getTime() <= nowMs ? "expired" : "active";
}

export function apiTokenCreatorKind(createdById: string | null): ApiTokenCreatorKind {
  if (createdById === null) return "cli";
  return createdById.startsWith("tok_") ? "token" : "operator";
}

/** A token's state and effective role, as `ApiTokenRecord` reports them. */
export interface ApiTokenStanding {
  readonly state: ApiTokenState;
  readonly effectiveRole: Role | null;
}

/** The fields the standing depends on. */
export const apiTokenStandingSelect = {
  id: true,
  role: true,
  createdById: true,
  expiresAt: true,
  revokedAt: true,
} satisfies Prisma.ApiTokenSelect;
type StandingRow = Prisma.ApiTokenGetPayload<{ select: typeof apiTokenStandingSelect }>;

/**
 * A creator chain longer than this is refused: tokens are made by operators, and rarely by a
 * token made by an operator; a chain of nine is a mistake or an attack, never a need.
 */
const MAX_CREATOR_CHAIN = 8;

function lesserRole(a: Role, b: Role): Role {
  return rankOf(a) <= rankOf(b) ? a : b;
}

/**
 * Whether `row` works at `nowMs` and with what role: its own revocation and expiry first, then
 * its creator, read now (one indexed lookup per link of the chain, usually one). A creator that
 * cannot be found suspends it: an operator removed from the database takes their tokens along.
 */
export async function resolveApiTokenStanding(
  db: Db,
  row: StandingRow,
  nowMs: number,
): Promise<ApiTokenStanding> {
  const suspended: ApiTokenStanding = { state: "suspended", effectiveRole: null };
  let role = row.role;
  let link: StandingRow = row;
  for (let depth = 0; ; depth += 1) {
    const own = ownTokenState(link, nowMs);
    if (own !== "active") return link === row ? { state: own, effectiveRole: null } : suspended;
    if (depth > MAX_CREATOR_CHAIN) return suspended;
    const kind = apiTokenCreatorKind(link.createdById);
    if (kind === "cli" || link.createdById === null)
      return { state: "active", effectiveRole: role };
    if (kind === "operator") {
      const operator = await db.operator.findUnique({
        where: { id: link.createdById },
        select: { role: true, disabledAt: true },
      });
      if (operator === null || operator.disabledAt !== null) return suspended;
      return { state: "active", effectiveRole: lesserRole(role, operator.role) };
    }
    const parent = await db.apiToken.findUnique({
      where: { id: link.createdById },
      select: apiTokenStandingSelect,
    });
    if (parent === null) return suspended;
    role = lesserRole(role, parent.role);
    link = parent;
  }
}

export function toApiTokenRecord(row: ApiTokenRow, standing: ApiTokenStanding): ApiTokenRecord {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    role: row.role,
    effectiveRole: standing.effectiveRole,
    createdBy: {
      kind: apiTokenCreatorKind(row.createdById),
      id: row.createdById,
      name: row.createdByName,
    },
    createdAt: isoOf(row.createdAt),
    expiresAt: row.expiresAt === null ? null : isoOf(row.expiresAt),
    revokedAt: row.revokedAt === null ? null : isoOf(row.revokedAt),
    lastUsedAt: row.lastUsedAt === null ? null : isoOf(row.lastUsedAt),
    version: row.version,
    state: standing.state,
  };
}

/** `toApiTokenRecord` with the standing read now. */
export async function readApiTokenRecord(
  db: Db,
  row: ApiTokenRow,
  nowMs: number,
): Promise<ApiTokenRecord> {
  return toApiTokenRecord(row, await resolveApiTokenStanding(db, row, nowMs));
}

/** What a token's audit entries show: the record without the volatile fields. */
export function apiTokenAuditView(record: ApiTokenRecord) {
  const { lastUsedAt: _lastUsedAt, state: _state, effectiveRole: _effectiveRole, ...view } = record;
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
  return readApiTokenRecord(db, row, nowMs);
}

/** An API token as `versionedWrite` reads, checks and records it (never its hash). */
export function apiTokenEntity(id: string): VersionedEntity<ApiTokenRecord> {
  return {
    find: (tx, nowMs) => findApiToken(tx, id, nowMs),
    entityType: "token",
    entityId: id,
    label: apiTokenLabel,
    view: apiTokenAuditView,
  };
}
