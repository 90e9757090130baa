import { z } from "zod";
import { latestPolicyVersion } from "../approval/approval-gate";
import { parseOptions } from "../change-context";
import type { ClockedReadDeps } from "../deps";
import {
  CHANGE_REQUEST_STATUSES,
  type ChangeRequestRecord,
  changeRequestSelect,
  toChangeRequestRecord,
} from "./change-request-record";

export const ZListChangeRequestsOptions = z.strictObject({
  /** `pending` lists the queue (those not yet expired), oldest first; others newest first. */
  status: z
    .enum(CHANGE_REQUEST_STATUSES, {
      error: `status must be one of: ${CHANGE_REQUEST_STATUSES.join(", ")}`,
    })
    .optional(),
  /** @default 50 */
  limit: z.number().int().min(1).max(200).default(50),
});
export type ListChangeRequestsOptions = z.input<typeof ZListChangeRequestsOptions>;

export async function listChangeRequests(
  options: ListChangeRequestsOptions,
  deps: ClockedReadDeps,
): Promise<ChangeRequestRecord[]> {
  const input = parseOptions(ZListChangeRequestsOptions, options);
  const nowMs = deps.clock.nowMs();
  const now = new Date(nowMs);
  const where =
    input.status === undefined
      ? {}
      : input.status === "pending"
        ? { status: "pending", expiresAt: { gt: now } }
        : input.status === "expired"
          ? { OR: [{ status: "expired" }, { status: "pending", expiresAt: { lte: now } }] }
          : { status: input.status };
  const [rows, latest] = await Promise.all([
    deps.db.changeRequest.findMany({
      where,
      orderBy:
        input.status === "pending"
          ? [{ createdAt: "asc" }, { id: "asc" }]
          : [{ createdAt: "desc" }, { id: "desc" }],
      take: input.limit,
      select: changeRequestSelect,
    }),
    latestPolicyVersion(deps.db),
  ]);
  return rows.map((row) => toChangeRequestRecord(row, latest, nowMs));
}

/** How many requests wait for a decision (the overview's count). */
export async function countPendingChangeRequests(deps: ClockedReadDeps): Promise<number> {
  return deps.db.changeRequest.count({
    where: { status: "pending", expiresAt: { gt: new Date(deps.clock.nowMs()) } },
  });
}
