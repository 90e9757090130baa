/**
 * The audit log, newest first, with filters and keyset pagination on (at, id) descending. Each
 * filter has an index that leads with it and ends with (at DESC, id DESC), and the cursor adds
 * `at <= cursorAt` as a range on that index, so the first page and the ten-thousandth cost the
 * same: a short index range scan, never an OFFSET. `before` walks the other way (newer entries,
 * the same index read backwards) so a pager can go back without remembering where it came from.
 */

import { hasForbiddenCharacter, ZCustomerId, ZInstant } from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import { ACTOR_TYPES, type Actor, parseOptions } from "../change-context";
import type { ReadDeps } from "../deps";
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
    /** `nextCursor` of the previous page: the entries older than it. */
    cursor: z.string().max(200).optional(),
    /** `previousCursor` of a page: the entries newer than it (newest first, like every page). */
    before: z.string().max(200).optional(),
    /** @default 50 */
    limit: z.number().int().min(1).max(200).default(50),
  })
  .refine((options) => options.entityId === undefined || options.entityType !== undefined, {
    path: ["entityId"],
    error: "entityId needs entityType",
  })
  .refine((options) => options.cursor === undefined || options.before === undefined, {
    path: ["before"],
    error: "before and cursor page in opposite directions; pass one of them",
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
  /**
   * Pass as `before` for the previous (newer) page; null on the first page. After a `cursor`
   * page it is set whenever the page has entries (the page that led here is newer).
   */
  readonly previousCursor: string | null;
}

export const auditSelect = {
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

export function encodeAuditCursor(at: Date, id: bigint): string {
  return Buffer.from(JSON.stringify([at.toISOString(), id.toString()])).toString("base64url");
}

function decodeCursor(cursor: string, field: "cursor" | "before"): { at: Date; id: bigint } {
  try {
    const [at, id] = ZCursor.parse(JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")));
    return { at: new Date(at), id: BigInt(id) };
  } catch {
    throw validationError([
      {
        path: field,
        message: `${field} is not one this service returned; start from the first page`,
      },
    ]);
  }
}

const ZStoredAuditFields = z.object({
  actorType: z.enum(ACTOR_TYPES),
  action: z.enum(AUDIT_ACTIONS),
  entityType: z.enum(AUDIT_ENTITY_TYPES),
});

export function toAuditEntryRecord(row: AuditRow): AuditEntryRecord {
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
  options: ListAuditEntriesOptions,
  deps: ReadDeps,
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
    const cursor = decodeCursor(input.cursor, "cursor");
    // (at, id) < cursor, with `at <= cursor.at` as the index range the scan starts from.
    conditions.push(
      { at: { lte: cursor.at } },
      { OR: [{ at: { lt: cursor.at } }, { at: cursor.at, id: { lt: cursor.id } }] },
    );
  }
  const isBackward = input.before !== undefined;
  if (input.before !== undefined) {
    const cursor = decodeCursor(input.before, "before");
    // (at, id) > cursor, read oldest first from the cursor: the same index, scanned backwards.
    conditions.push(
      { at: { gte: cursor.at } },
      { OR: [{ at: { gt: cursor.at } }, { at: cursor.at, id: { gt: cursor.id } }] },
    );
  }
  const order = isBackward ? "asc" : "desc";
  const rows = await deps.db.auditEntry.findMany({
    where: { AND: conditions },
    orderBy: [{ at: order }, { id: order }],
    take: input.limit + 1,
    select: auditSelect,
  });
  const hasMore = rows.length > input.limit;
  const page = rows.slice(0, input.limit);
  if (isBackward) page.reverse();
  const first = page.at(0);
  const last = page.at(-1);
  const cursorOf = (row: AuditRow | undefined) =>
    row === undefined ? null : encodeAuditCursor(row.at, row.id);
  return {
    entries: page.map(toAuditEntryRecord),
    // Going back, the page's oldest entry is newer than `before`'s, so older entries exist.
    nextCursor: isBackward || hasMore ? cursorOf(last) : null,
    previousCursor: isBackward
      ? hasMore
        ? cursorOf(first)
        : null
      : input.cursor !== undefined
        ? cursorOf(first)
        : null,
  };
}
