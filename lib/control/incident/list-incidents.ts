import { MAX_INCIDENT_DURATION_MS, ZCustomerId } from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import { parseOptions } from "../change-context";
import type { ClockedReadDeps } from "../deps";
import { encodeCursor, parseCursor } from "../keyset-cursor";
import { currentIncidentWhere } from "../policy/stored-policy";
import {
  type IncidentRecord,
  type IncidentState,
  incidentSelect,
  incidentState,
  toIncidentRecord,
} from "./incident-record";

export const ZListIncidentsOptions = z.strictObject({
  customerId: ZCustomerId.optional(),
  /**
   * `current`: active and upcoming, soonest expiry first (what the policy holds).
   * `history`: expired and reverted, latest start first. `all`: both, latest start first.
   * @default "current"
   */
  status: z
    .enum(["current", "history", "all"], { error: "status must be one of: current, history, all" })
    .default("current"),
  /** With `current`: only those expiring within this many ms (the console's "expiring soon"). */
  expiringWithinMs: z.number().int().min(1).max(MAX_INCIDENT_DURATION_MS).optional(),
  /** @default 100 */
  limit: z.number().int().min(1).max(500).default(100),
  /** The instant states are judged at. @default now */
  nowMs: z.number().int().optional(),
  /** Where the previous page ended (its `nextCursor`); absent: the first page. */
  after: z
    .string({ error: "after must be text" })
    .superRefine((value, context) => {
      const parsed = parseCursor(value);
      if (!parsed.ok) context.addIssue({ code: "custom", message: `after ${parsed.message}` });
    })
    .optional(),
});
export type ListIncidentsOptions = z.input<typeof ZListIncidentsOptions>;

export type IncidentWithState = IncidentRecord & { readonly state: IncidentState };

export interface IncidentPage {
  readonly incidents: readonly IncidentWithState[];
  /** Pass as `after` for the next page; `null` on the last page. */
  readonly nextCursor: string | null;
}

/** Incident overrides, with where each stands (indexed: by customer and expiry, or by expiry). */
export async function listIncidents(
  options: ListIncidentsOptions,
  deps: ClockedReadDeps,
): Promise<IncidentWithState[]> {
  return [...(await listIncidentsPage(options, deps)).incidents];
}

/**
 * {@link listIncidents} a page at a time: keyset on the list's own order (`current`: expiry then
 * id; otherwise start, newest first, then id), so a deep page costs what the first does and an
 * incident raised meanwhile never shifts the pages.
 */
export async function listIncidentsPage(
  options: ListIncidentsOptions,
  deps: ClockedReadDeps,
): Promise<IncidentPage> {
  const input = parseOptions(ZListIncidentsOptions, options);
  const nowMs = input.nowMs ?? deps.clock.nowMs();
  const current = currentIncidentWhere(nowMs);
  const where: Prisma.IncidentOverrideWhereInput =
    input.status === "current"
      ? {
          ...current,
          expiresAt:
            input.expiringWithinMs === undefined
              ? { gt: new Date(nowMs) }
              : { gt: new Date(nowMs), lte: new Date(nowMs + input.expiringWithinMs) },
        }
      : input.status === "history"
        ? { NOT: current }
        : {};
  const isByExpiry = input.status === "current";
  const position = input.after === undefined ? null : parseCursor(input.after);
  const resume: Prisma.IncidentOverrideWhereInput =
    position === null || !position.ok
      ? {}
      : isByExpiry
        ? {
            OR: [
              { expiresAt: { gt: new Date(position.cursor.atMs) } },
              { expiresAt: new Date(position.cursor.atMs), id: { gt: position.cursor.id } },
            ],
          }
        : {
            OR: [
              { startsAt: { lt: new Date(position.cursor.atMs) } },
              { startsAt: new Date(position.cursor.atMs), id: { gt: position.cursor.id } },
            ],
          };
  const rows = await deps.db.incidentOverride.findMany({
    where: { AND: [where, resume], customerId: input.customerId },
    orderBy: isByExpiry
      ? [{ expiresAt: "asc" }, { id: "asc" }]
      : [{ startsAt: "desc" }, { id: "asc" }],
    take: input.limit + 1,
    select: incidentSelect,
  });
  const incidents = rows.slice(0, input.limit).map((row) => {
    const incident = toIncidentRecord(row);
    return { ...incident, state: incidentState(incident, nowMs) };
  });
  const last = incidents.at(-1);
  return {
    incidents,
    nextCursor:
      rows.length > input.limit && last !== undefined
        ? encodeCursor({
            at: Date.parse(isByExpiry ? last.expiresAt : last.startsAt),
            id: last.id,
          })
        : null,
  };
}
