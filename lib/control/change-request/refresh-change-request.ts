import { latestPolicyVersion, undecidableError } from "../approval/approval-gate";
import { runAuditedChange } from "../audit/run-audited-change";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { lockPolicyChanges } from "../locks";
import { toJson } from "../stored";
import { assessRequestedChange } from "./assess-requested-change";
import {
  type ChangeRequestRecord,
  changeRequestSelect,
  toChangeRequestRecord,
} from "./change-request-record";
import { findChangeRequest } from "./find-change-request";
import {
  type DecideChangeRequestOptions,
  ZDecideChangeRequestOptions,
} from "./reject-change-request";

/**
 * Re-previews a pending request against the policy as it is now: the diff, preview and backtest
 * are computed again, the change is rebased on the entity's current version, and the request
 * records the policy version it now stands on, so it can be approved again. Its version goes up,
 * so an approver who read the old preview gets a version conflict instead of approving unseen.
 */
export async function refreshChangeRequest(
  options: DecideChangeRequestOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly changeRequest: ChangeRequestRecord; readonly auditEntryId: string }> {
  const { input, ctx } = parseChange(ZDecideChangeRequestOptions, options, context);
  const request = await findChangeRequest(deps.db, input.id, deps.clock.nowMs());
  if (request.status !== "pending")
    throw await undecidableError(deps.db, input.id, deps.clock.nowMs());
  const { change, assessment } = await assessRequestedChange(request.change, deps, {
    rebase: true,
  });
  return runAuditedChange(deps, ctx, {
    action: "change-request.refresh",
    entityType: "change-request",
    lock: lockPolicyChanges,
    async write(tx, nowMs) {
      if ((await latestPolicyVersion(tx)) !== assessment.basePolicyVersion) {
        throw new AppError(
          "CONFLICT",
          "The policy changed again while this request was re-previewed; nothing was saved. Try again.",
        );
      }
      const claimed = await tx.changeRequest.updateMany({
        where: {
          id: input.id,
          status: "pending",
          version: input.expectedVersion,
          expiresAt: { gt: new Date(nowMs) },
        },
        data: {
          change: toJson(change),
          diff: toJson(assessment.diff),
          preview: assessment.preview === null ? undefined : toJson(Object(assessment.preview)),
          backtest: assessment.backtest === null ? undefined : toJson(Object(assessment.backtest)),
          gatedBy: toJson(assessment.gatedBy),
          basePolicyVersion: assessment.basePolicyVersion,
          previewedAt: new Date(nowMs),
          version: { increment: 1 },
        },
      });
      if (claimed.count === 0) throw await undecidableError(tx, input.id, nowMs);
      const row = await tx.changeRequest.findUniqueOrThrow({
        where: { id: input.id },
        select: changeRequestSelect,
      });
      const changeRequest = toChangeRequestRecord(row, assessment.basePolicyVersion, nowMs);
      return {
        entityId: input.id,
        before: {
          basePolicyVersion: request.basePolicyVersion,
          version: request.version,
          diff: request.diff,
        },
        after: {
          basePolicyVersion: assessment.basePolicyVersion,
          version: changeRequest.version,
          diff: assessment.diff,
        },
        value: { changeRequest },
      };
    },
  });
}
