/**
 * The decisions that apply nothing: reject (an eligible operator, with a reason), withdraw (the
 * author), expire (the worker). Each claims the pending request with a conditional update, so of
 * two decisions made at once exactly one wins and the other gets 409; each writes its audit entry
 * and its webhook notice in the same transaction.
 */
import { undecidableError } from "../approval/approval-gate";
import type { AuditedChangeDeps } from "../audit/run-audited-change";
import { runAuditedChange } from "../audit/run-audited-change";
import type { TChangeContext } from "../change-context";
import { toJson } from "../stored";
import type { ChangeRequestRecord } from "./change-request-record";
import { findChangeRequest } from "./find-change-request";

export type Decision = "rejected" | "withdrawn" | "expired";

const ACTIONS = {
  rejected: "change-request.reject",
  withdrawn: "change-request.withdraw",
  expired: "change-request.expire",
} as const;

export async function decideChangeRequest(
  id: string,
  expectedVersion: number | null,
  decision: Decision,
  ctx: TChangeContext,
  deps: AuditedChangeDeps,
): Promise<{ readonly changeRequest: ChangeRequestRecord; readonly auditEntryId: string }> {
  return runAuditedChange(deps, ctx, {
    action: ACTIONS[decision],
    entityType: "change-request",
    async write(tx, nowMs) {
      const now = new Date(nowMs);
      const claimed = await tx.changeRequest.updateMany({
        where: {
          id,
          status: "pending",
          ...(expectedVersion === null ? {} : { version: expectedVersion }),
          // An expiry is due once the time has come; the others only before it.
          expiresAt: decision === "expired" ? { lte: now } : { gt: now },
        },
        data: {
          status: decision,
          decidedAt: now,
          deciderId: ctx.actor.id,
          deciderName: ctx.actor.name,
          decisionNote: decision === "expired" ? null : ctx.reason,
          version: { increment: 1 },
        },
      });
      if (claimed.count === 0) throw await undecidableError(tx, id, nowMs);
      const changeRequest = await findChangeRequest(tx, id, nowMs);
      await tx.changeRequestEvent.create({
        data: {
          changeRequestId: id,
          event: decision,
          payload: toJson({
            id,
            status: decision,
            action: changeRequest.action,
            entityId: changeRequest.entityId,
            deciderName: ctx.actor.name,
            note: decision === "expired" ? null : ctx.reason,
          }),
          at: now,
        },
        select: { id: true },
      });
      return {
        entityId: id,
        before: { status: "pending", version: changeRequest.version - 1 },
        after: { status: decision, version: changeRequest.version },
        value: { changeRequest },
      };
    },
    async linkAuditEntry(tx, auditEntryId, value) {
      await tx.changeRequest.update({
        where: { id },
        data: { decisionAuditEntryId: auditEntryId },
        select: { id: true },
      });
      const { changeRequest } = value;
      return {
        changeRequest: {
          ...changeRequest,
          auditEntries: { ...changeRequest.auditEntries, decision: auditEntryId.toString() },
        },
      };
    },
  });
}
