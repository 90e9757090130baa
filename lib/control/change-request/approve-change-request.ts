import { textField } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { latestPolicyVersion, undecidableError } from "../approval/approval-gate";
import {
  type ChangeContext,
  MAX_REASON_LENGTH,
  parseChange,
  ZExpectedVersion,
} from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import type { ChangeReceipt } from "../policy/run-policy-change";
import { applyRequestedChange } from "./apply-requested-change";
import { type ChangeRequestRecord, ZChangeRequestId } from "./change-request-record";
import { findChangeRequest } from "./find-change-request";

export const ZApproveChangeRequestOptions = z.strictObject({
  id: ZChangeRequestId,
  /** The request's version as the approver read it. */
  expectedVersion: ZExpectedVersion,
  /** Shown in the audit log as the decision's reason. */
  note: textField("note", MAX_REASON_LENGTH).optional(),
});
export type ApproveChangeRequestOptions = z.input<typeof ZApproveChangeRequestOptions>;

/** A signed-in operator other than the author may decide; a token never. Shared with reject. */
export function refuseIneligibleDecider(
  request: ChangeRequestRecord,
  actor: { readonly type: string; readonly id: string | null },
  verb: "approve" | "reject",
): void {
  if (actor.type !== "operator") {
    throw new AppError(
      "FORBIDDEN",
      `An API token may request a change but never ${verb} one: a signed-in operator other than the author decides.`,
      { details: { requires: "session" } },
    );
  }
  if (actor.id === request.author.id || actor.id === request.author.operatorId) {
    throw new AppError(
      "FORBIDDEN",
      verb === "approve"
        ? "You requested this change (or created the token that did); another admin must approve it."
        : "You requested this change (or created the token that did); withdraw it instead of rejecting it.",
      { details: { author: request.author.name } },
    );
  }
}

/**
 * Approves a pending request and applies its change, in one transaction: the change's own
 * service runs with the approval in its context, and the approval gate claims the request (so a
 * concurrent decision gets 409), refuses a stale one, and writes the decision's audit entry
 * linked to the request's and the change's. The approver must be an enabled operator whose role
 * may approve (checked by the caller's permission and here against the stored operator).
 */
export async function approveChangeRequest(
  options: ApproveChangeRequestOptions,
  context: Omit<ChangeContext, "reason" | "approval">,
  deps: ControlDeps,
): Promise<{ readonly changeRequest: ChangeRequestRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZApproveChangeRequestOptions, options, {
    ...context,
    reason: "approval",
  });
  const nowMs = deps.clock.nowMs();
  const request = await findChangeRequest(deps.db, input.id, nowMs);
  refuseIneligibleDecider(request, ctx.actor, "approve");
  const approver =
    ctx.actor.id === null
      ? null
      : await deps.db.operator.findUnique({
          where: { id: ctx.actor.id },
          select: { role: true, disabledAt: true },
        });
  if (approver === null || approver.role !== "admin" || approver.disabledAt !== null) {
    throw new AppError("FORBIDDEN", "Only an enabled admin may approve a change request.");
  }
  if (request.status !== "pending") throw await undecidableError(deps.db, input.id, nowMs);
  if (request.version !== input.expectedVersion) {
    throw await undecidableError(deps.db, input.id, nowMs);
  }
  if (request.isStale) {
    throw new AppError(
      "STALE_CHANGE_REQUEST",
      `The policy changed since this request was previewed (version ${request.basePolicyVersion ?? "none"}, now ${(await latestPolicyVersion(deps.db)) ?? "none"}). Re-preview it, check the new diff, then approve.`,
      { details: { changeRequestId: input.id, basePolicyVersion: request.basePolicyVersion } },
    );
  }
  const prefix = `Change request ${request.id} by ${request.author.name}: `;
  const receipt = await applyRequestedChange(
    request.change,
    {
      actor: ctx.actor,
      reason: `${prefix}${request.reason}`.slice(0, MAX_REASON_LENGTH),
      requestId: ctx.requestId,
      approval: {
        changeRequestId: request.id,
        expectedVersion: input.expectedVersion,
        note: input.note,
      },
    },
    deps,
  );
  return {
    changeRequest: await findChangeRequest(deps.db, input.id, deps.clock.nowMs()),
    auditEntryId: receipt.auditEntryId,
    policyVersion: receipt.policyVersion,
    published: receipt.published,
  };
}
