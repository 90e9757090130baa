/**
 * The approval gate, asked by `runPolicyChange` inside every policy change's transaction, after
 * the change is written and before its audit entry:
 *
 * - a change made without an approval: when the approval settings say it needs a second person
 *   (approval-rules.ts), it is refused with APPROVAL_REQUIRED and rolls back; the caller requests
 *   it instead (POST /api/v1/change-requests);
 * - a change made by approving a request (`ctx.approval`): the request is claimed with a
 *   conditional update (pending, not expired, at the version the approver saw), so of two
 *   operators deciding at once exactly one wins; a request whose policy has moved on since its
 *   preview is STALE_CHANGE_REQUEST. Once the change's audit entry exists, `finish` writes the
 *   decision's entry, linking the request's, and queues the webhook notice. All of it commits or
 *   rolls back with the change.
 */
import type { Prisma } from "@/lib/generated/prisma/client";
import { writeAuditEntry } from "../audit/audited-transaction";
import type { TChangeContext } from "../change-context";
import { AppError } from "../errors";
import { type Db, toJson } from "../stored";
import { approvalReasons, type GatedChange } from "./approval-rules";
import { findApprovalSettings } from "./approval-settings-record";

type Tx = Prisma.TransactionClient;

/** What the gate hands back for an approved change: called with the change's audit entry. */
export interface ApprovalSeal {
  finish(tx: Tx, appliedAuditEntryId: bigint, policyVersion: number | null): Promise<void>;
}

/** The latest policy version, or null before the first. */
export async function latestPolicyVersion(tx: Db): Promise<number | null> {
  const latest = await tx.policyVersion.findFirst({
    orderBy: { version: "desc" },
    select: { version: true },
  });
  return latest?.version ?? null;
}

export async function gateApproval(
  tx: Tx,
  ctx: TChangeContext,
  change: GatedChange,
  nowMs: number,
  auditKey: string | undefined,
): Promise<ApprovalSeal | null> {
  const approval = ctx.approval;
  if (approval === undefined) {
    const rules = await findApprovalSettings(tx);
    const reasons = approvalReasons(rules, change);
    if (reasons.length === 0) return null;
    throw new AppError(
      "APPROVAL_REQUIRED",
      `This change needs a second person's approval: ${reasons.join("; ")}. Nothing was saved; request it instead (POST /api/v1/change-requests, or "Request approval" in the console).`,
      { details: { gatedBy: reasons } },
    );
  }
  const request = await tx.changeRequest.findUnique({
    where: { id: approval.changeRequestId },
    select: { action: true, entityType: true, entityId: true, basePolicyVersion: true },
  });
  if (request === null) throw new Error(`change request ${approval.changeRequestId} vanished`);
  // A promotion is requested by candidate and recorded on the rule it replaces; a staged change
  // may be given its id only when it starts.
  const isSameEntity =
    request.entityType === "candidate" ||
    request.entityType === "staged-change" ||
    request.entityId === change.entityId;
  if (request.action !== change.action || !isSameEntity) {
    throw new Error(
      `change request ${approval.changeRequestId} is ${request.action} of ${request.entityId}, not ${change.action} of ${change.entityId}`,
    );
  }
  const now = new Date(nowMs);
  const claimed = await tx.changeRequest.updateMany({
    where: {
      id: approval.changeRequestId,
      status: "pending",
      version: approval.expectedVersion,
      expiresAt: { gt: now },
    },
    data: {
      status: "approved",
      decidedAt: now,
      deciderId: ctx.actor.id,
      deciderName: ctx.actor.name,
      decisionNote: approval.note ?? null,
      version: { increment: 1 },
    },
  });
  if (claimed.count === 0) throw await undecidableError(tx, approval.changeRequestId, nowMs);
  const latest = await latestPolicyVersion(tx);
  if (latest !== request.basePolicyVersion) {
    throw new AppError(
      "STALE_CHANGE_REQUEST",
      `The policy changed since this request was previewed (version ${request.basePolicyVersion ?? "none"}, now ${latest ?? "none"}). Re-preview it, check the new diff, then approve.`,
      {
        details: {
          changeRequestId: approval.changeRequestId,
          basePolicyVersion: request.basePolicyVersion,
          latestPolicyVersion: latest,
        },
      },
    );
  }
  return {
    async finish(finishTx, appliedAuditEntryId, policyVersion) {
      const decisionAuditEntryId = await writeAuditEntry(
        finishTx,
        { actor: ctx.actor, reason: approval.note ?? "Approved", requestId: ctx.requestId },
        {
          action: "change-request.approve",
          entityType: "change-request",
          entityId: approval.changeRequestId,
          customerId: null,
          before: { status: "pending", version: approval.expectedVersion },
          after: {
            status: "approved",
            version: approval.expectedVersion + 1,
            appliedAuditEntryId: appliedAuditEntryId.toString(),
            appliedPolicyVersion: policyVersion,
          },
          policyVersion: null,
        },
        auditKey,
      );
      const row = await finishTx.changeRequest.update({
        where: { id: approval.changeRequestId },
        data: {
          decisionAuditEntryId,
          appliedAuditEntryId,
          appliedPolicyVersion: policyVersion,
        },
        select: { id: true, status: true, action: true, entityId: true, deciderName: true },
      });
      await finishTx.changeRequestEvent.create({
        data: { changeRequestId: row.id, event: "approved", payload: toJson(row), at: now },
        select: { id: true },
      });
    },
  };
}

/** Why a request cannot be decided now, as the 409 its caller gets. */
export async function undecidableError(tx: Tx, id: string, nowMs: number): Promise<AppError> {
  const row = await tx.changeRequest.findUnique({
    where: { id },
    select: { status: true, deciderName: true, decidedAt: true, expiresAt: true, version: true },
  });
  if (row === null) return new AppError("NOT_FOUND", `change request "${id}" does not exist.`);
  const details = { changeRequestId: id, status: row.status, version: row.version };
  if (row.status === "pending" && row.expiresAt.getTime() <= nowMs) {
    return new AppError(
      "CONFLICT",
      `Change request ${id} expired at ${row.expiresAt.toISOString()}; it can no longer be approved. Request the change again.`,
      { details: { ...details, status: "expired" } },
    );
  }
  if (row.status === "pending") {
    return new AppError(
      "VERSION_CONFLICT",
      `Change request ${id} changed since you read it (it is now at version ${row.version}); reload it and decide again.`,
      { details },
    );
  }
  const by = row.deciderName === null ? "" : ` by ${row.deciderName}`;
  const at = row.decidedAt === null ? "" : ` at ${row.decidedAt.toISOString()}`;
  return new AppError("CONFLICT", `Change request ${id} was already ${row.status}${by}${at}.`, {
    details,
  });
}
