import { randomBytes } from "node:crypto";
import { hasForbiddenCharacter } from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { isoOf } from "../stored";

/** Every column except the token's hash. */
export const sessionSelect = {
  id: true,
  operatorId: true,
  createdAt: true,
  expiresAt: true,
  lastSeenAt: true,
  revokedAt: true,
  userAgent: true,
  address: true,
} satisfies Prisma.SessionSelect;

type SessionRow = Prisma.SessionGetPayload<{ select: typeof sessionSelect }>;

export interface SessionRecord {
  readonly id: string;
  readonly operatorId: string;
  readonly createdAt: string;
  /** The absolute end; the idle limit may end it sooner. */
  readonly expiresAt: string;
  /** Exact to a minute. */
  readonly lastSeenAt: string;
  readonly revokedAt: string | null;
  readonly userAgent: string | null;
  readonly address: string | null;
}

export function toSessionRecord(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    operatorId: row.operatorId,
    createdAt: isoOf(row.createdAt),
    expiresAt: isoOf(row.expiresAt),
    lastSeenAt: isoOf(row.lastSeenAt),
    revokedAt: row.revokedAt === null ? null : isoOf(row.revokedAt),
    userAgent: row.userAgent,
    address: row.address,
  };
}

export function newSessionId(): string {
  return `ses_${randomBytes(8).toString("hex")}`;
}

/** Free text from request headers, made safe to store and show: bounded, no control characters. */
export function cleanHeaderText(value: string | null, maxLength: number): string | null {
  if (value === null) return null;
  const cleaned = [...value]
    .filter((character) => !hasForbiddenCharacter(character))
    .join("")
    .trim();
  return cleaned === "" ? null : cleaned.slice(0, maxLength);
}

/** The filter of sessions that still work at `nowMs` (the idle limit is checked per request). */
export function liveSessionWhere(nowMs: number): Prisma.SessionWhereInput {
  return { revokedAt: null, expiresAt: { gt: new Date(nowMs) } };
}
