import { MAX_WINDOW_MS, ZCustomerId } from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import { controlDeps } from "@/lib/server/composition";
import { parseOptions } from "../change-context";
import type { ClockedReadDeps } from "../deps";
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
  expiringWithinMs: z.number().int().min(1).max(MAX_WINDOW_MS).optional(),
  /** @default 100 */
  limit: z.number().int().min(1).max(500).default(100),
  /** The instant states are judged at. @default now */
  nowMs: z.number().int().optional(),
});
export type ListIncidentsOptions = z.input<typeof ZListIncidentsOptions>;

export type IncidentWithState = IncidentRecord & { readonly state: IncidentState };

/** Incident overrides, with where each stands (indexed: by customer and expiry, or by expiry). */
export async function listIncidents(
  options: ListIncidentsOptions = {},
  deps: ClockedReadDeps = controlDeps(),
): Promise<IncidentWithState[]> {
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
  const rows = await deps.db.incidentOverride.findMany({
    where: { ...where, customerId: input.customerId },
    orderBy:
      input.status === "current"
        ? [{ expiresAt: "asc" }, { id: "asc" }]
        : [{ startsAt: "desc" }, { id: "asc" }],
    take: input.limit,
    select: incidentSelect,
  });
  return rows.map((row) => {
    const incident = toIncidentRecord(row);
    return { ...incident, state: incidentState(incident, nowMs) };
  });
}
