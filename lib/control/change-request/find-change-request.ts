import { latestPolicyVersion } from "../approval/approval-gate";
import type { ClockedReadDeps } from "../deps";
import { notFound } from "../errors";
import type { Db } from "../stored";
import {
  type ChangeRequestRecord,
  changeRequestSelect,
  toChangeRequestRecord,
} from "./change-request-record";

/** The request as it stands in `db` (a transaction's view when given one), or NOT_FOUND. */
export async function findChangeRequest(
  db: Db,
  id: string,
  nowMs: number,
): Promise<ChangeRequestRecord> {
  const [row, latest] = await Promise.all([
    db.changeRequest.findUnique({ where: { id }, select: changeRequestSelect }),
    latestPolicyVersion(db),
  ]);
  if (row === null) throw notFound("change request", id);
  return toChangeRequestRecord(row, latest, nowMs);
}

/** One change request; NOT_FOUND when there is none with that id. */
export async function getChangeRequest(
  id: string,
  deps: ClockedReadDeps,
): Promise<ChangeRequestRecord> {
  return findChangeRequest(deps.db, id, deps.clock.nowMs());
}
