/**
 * The audit log, newest first, with filters and keyset pagination on (at, id) descending. Each
 * filter has an index that leads with it and ends with (at DESC, id DESC), and the cursor adds
 * `at <= cursorAt` as a range on that index, so the first page and the ten-thousandth cost the
 * same: a short index range scan, never an OFFSET.
 */
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import { hasForbiddenCharacter, ZCustomerId, ZInstant } from "@/lib/policy";
import { ACTOR_TYPES, type Actor, parseOptions } from "../change-context";
import { getControlDeps, type ReadDeps } from "../control-deps";
import { validationError } from "../errors";
import { parseStored } from "../stored";
import {
  AUDIT_ACTIONS,
  AUDIT_ENTITY_TYPES,
  type AuditAction,
  type AuditEntityType,
} from "./audit-actions";

/** An identifier to filter by: never a control character (Postgres refuses NUL in text). */
function plainText(label: string, maxLength: number) {
  return z
    .string({ error: `${label} must be text` })
    .min(1, { error: `${label} must not be empty` })
    .max(maxLength, { error: `${label} must be at most ${maxLength} characters` })
    .refine((value) => !hasForbiddenCharacter(value), {
      error: `${label} must not contain control or bidirectional formatting characters`,
    });
}

export const ZListAuditEntriesOptions = z
  .strictObject({
    actorId: plainText("actorId", 200).optional(),
    actorType: z.enum(ACTOR_TYPES).optional(),
    action: z.enum(AUDIT_ACTIONS, { error: "action must be one of the audit actions" }).optional(),
    entityType: z
      .enum(AUDIT_ENTITY_TYPES, { error: "entityType must be one of the entity types" })
      .optional(),
    /** Requires `entityType`. */
    entityId: plainText("entityId", 300).optional(),
    customerId: ZCustomerId.optional(),
    /** Entries at or after this instant. */
    from: ZInstant.optional(),
    /** Entries before this instant. */
    to: ZInstant.optional(),
    /** `nextCursor` of the previous page. */
    cursor: z.string().max(200).optional(),
    /** @default 50 */
    limit: z.number().int().min(1).max(200).default(50),
  })
  .refine((options) => options.entityId === undefined || options.entityType !== undefined, {
    path: ["entityId"],
    error: "entityId needs entityType",
  });
export type ListAuditEntriesOptions = z.input<typeof ZListAuditEntriesOptions>;

export interface AuditEntryRecord {
  /** A bigint, as decimal text. */
  readonly id: string;
  readonly at: string;
  readonly actor: Actor;
  readonly action: AuditAction;
  readonly entityType: AuditEntityType;
  readonly entityId: string;
  readonly customerId: string | null;
  readonly before: unknown;
  readonly after: unknown;
  readonly reason: string;
  readonly requestId: string | null;
  readonly policyVersion: number | null;
}

export interface AuditPage {
  readonly entries: readonly AuditEntryRecord[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  readonly nextCursor: string | null;
}

const auditSelect = {
  id: true,
  at: true,
  actorType: true,
  actorId: true,
  actorName: true,
  action: true,
  entityType: true,
  entityId: true,
  customerId: true,
  before: true,
  after: true,
  reason: true,
  requestId: true,
  policyVersion: true,
} satisfies Prisma.AuditEntrySelect;

type AuditRow = Prisma.AuditEntryGetPayload<{ select: typeof auditSelect }>;

const ZCursor = z.tuple([ZInstant, z.string().regex(/^[1-9][0-9]{0,18}$/)]);

function encodeAuditCursor(at: Date, id: bigint): string {
  return Buffer.from(JSON.stringify([at.toISOString(), id.toString()])).toString("base64url");
}

function decodeCursor(cursor: string): { at: Date; id: bigint } {
  try {
    const [at, id] = ZCursor.parse(JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")));
    return { at: new Date(at), id: BigInt(id) };
  } catch {
    throw validationError([
      {
        path: "cursor",
        message: "cursor is not one this service returned; start from the first page",
      },
    ]);
  }
}

const ZStoredAuditFields = z.object({
  actorType: z.enum(ACTOR_TYPES),
  action: z.enum(AUDIT_ACTIONS),
  entityType: z.enum(AUDIT_ENTITY_TYPES),
});

function toAuditEntryRecord(row: AuditRow): AuditEntryRecord {
  const { actorType, action, entityType } = parseStored(
    ZStoredAuditFields,
    { actorType: row.actorType, action: row.action, entityType: row.entityType },
    `audit entry ${row.id}`,
  );
  return {
    id: row.id.toString(),
    at: row.at.toISOString(),
    actor: { type: actorType, id: row.actorId, name: row.actorName },
    action,
    entityType,
    entityId: row.entityId,
    customerId: row.customerId,
    before: row.before,
    after: row.after,
    reason: row.reason,
    requestId: row.requestId,
    policyVersion: row.policyVersion,
  };
}

export async function listAuditEntries(
  options: ListAuditEntriesOptions = {},
  deps: ReadDeps = getControlDeps(),
): Promise<AuditPage> {
  const input = parseOptions(ZListAuditEntriesOptions, options);
  const conditions: Prisma.AuditEntryWhereInput[] = [
    {
      actorId: input.actorId,
      actorType: input.actorType,
      action: input.action,
      entityType: input.entityType,
      entityId: input.entityId,
      customerId: input.customerId,
    },
  ];
  if (input.from !== undefined) conditions.push({ at: { gte: new Date(input.from) } });
  if (input.to !== undefined) conditions.push({ at: { lt: new Date(input.to) } });
  if (input.cursor !== undefined) {
    const cursor = decodeCursor(input.cursor);
    // (at, id) < cursor, with `at <= cursor.at` as the index range the scan starts from.
    conditions.push(
      { at: { lte: cursor.at } },
      { OR: [{ at: { lt: cursor.at } }, { at: cursor.at, id: { lt: cursor.id } }] },
    );
  }
  const rows = await deps.db.auditEntry.findMany({
    where: { AND: conditions },
    orderBy: [{ at: "desc" }, { id: "desc" }],
    take: input.limit + 1,
    select: auditSelect,
  });
  const page = rows.slice(0, input.limit);
  const last = page.at(-1);
  return {
    entries: page.map(toAuditEntryRecord),
    nextCursor:
      rows.length > input.limit && last !== undefined ? encodeAuditCursor(last.at, last.id) : null,
  };
}
