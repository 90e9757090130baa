import { randomBytes } from "node:crypto";
import { z } from "zod";
import { latestPolicyVersion } from "../approval/approval-gate";
import { findApprovalSettings } from "../approval/approval-settings-record";
import { type AuditReceipt, runAuditedChange } from "../audit/run-audited-change";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { lockPolicyChanges } from "../locks";
import { toJson } from "../stored";
import { assessRequestedChange } from "./assess-requested-change";
import {
  type ChangeRequestRecord,
  changeRequestSelect,
  targetOf,
  toChangeRequestRecord,
  ZRequestedChange,
} from "./change-request-record";

export const ZCreateChangeRequestOptions = z.strictObject({ change: ZRequestedChange });
export type CreateChangeRequestOptions = z.input<typeof ZCreateChangeRequestOptions>;

/** Attempts when the policy changes between the preview and the save. */
const MAX_ATTEMPTS = 3;

/**
 * Saves a change as a request for a second person's approval, with its diff, preview and
 * backtest as they stand now and the policy version they were computed against. The change is
 * validated and version-checked as its service will check it, so a request that saves is one
 * the service accepts unless the policy moves on (the request then becomes stale). Operators and
 * API tokens may request; the context's reason is the change's reason.
 */
export async function createChangeRequest(
  options: CreateChangeRequestOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly changeRequest: ChangeRequestRecord } & AuditReceipt> {
  const { input, ctx } = parseChange(ZCreateChangeRequestOptions, options, context);
  if (ctx.actor.type === "system") throw new Error("the system does not request changes");
  const target = targetOf(input.change);
  for (let attempt = 1; ; attempt++) {
    const { change, assessment } = await assessRequestedChange(input.change, deps);
    try {
      return await runAuditedChange(deps, ctx, {
        action: "change-request.create",
        entityType: "change-request",
        lock: lockPolicyChanges,
        async write(tx, nowMs) {
          if ((await latestPolicyVersion(tx)) !== assessment.basePolicyVersion) {
            throw new PreviewOutdated();
          }
          const rules = await findApprovalSettings(tx);
          const authorOperatorId =
            ctx.actor.type === "token" && ctx.actor.id !== null
              ? ((
                  await tx.apiToken.findUnique({
                    where: { id: ctx.actor.id },
                    select: { createdById: true },
                  })
                )?.createdById ?? null)
              : null;
          const id = `cr_${randomBytes(8).toString("hex")}`;
          const now = new Date(nowMs);
          const row = await tx.changeRequest.create({
            data: {
              id,
              ...target,
              change: toJson(change),
              diff: toJson(assessment.diff),
              preview: assessment.preview === null ? undefined : toJson(Object(assessment.preview)),
              backtest:
                assessment.backtest === null ? undefined : toJson(Object(assessment.backtest)),
              gatedBy: toJson(assessment.gatedBy),
              reason: ctx.reason,
              authorType: ctx.actor.type,
              authorId: ctx.actor.id,
              authorName: ctx.actor.name,
              authorOperatorId,
              basePolicyVersion: assessment.basePolicyVersion,
              previewedAt: now,
              expiresAt: new Date(nowMs + rules.requestLifetimeMs),
            },
            select: changeRequestSelect,
          });
          await tx.changeRequestEvent.create({
            data: {
              changeRequestId: id,
              event: "requested",
              payload: toJson({ id, ...target, authorName: ctx.actor.name, reason: ctx.reason }),
              at: now,
            },
            select: { id: true },
          });
          const changeRequest = toChangeRequestRecord(row, assessment.basePolicyVersion, nowMs);
          return {
            entityId: id,
            before: null,
            after: {
              ...target,
              status: "pending",
              change: change.kind === "policy.import" ? { kind: change.kind } : change,
              gatedBy: assessment.gatedBy,
              basePolicyVersion: assessment.basePolicyVersion,
              expiresAt: changeRequest.expiresAt,
            },
            value: { changeRequest },
          };
        },
        async linkAuditEntry(tx, auditEntryId, value) {
          await tx.changeRequest.update({
            where: { id: value.changeRequest.id },
            data: { requestAuditEntryId: auditEntryId },
            select: { id: true },
          });
          const { changeRequest } = value;
          return {
            changeRequest: {
              ...changeRequest,
              auditEntries: { ...changeRequest.auditEntries, request: auditEntryId.toString() },
            },
          };
        },
      });
    } catch (error: unknown) {
      if (!(error instanceof PreviewOutdated)) throw error;
      if (attempt >= MAX_ATTEMPTS) {
        throw new AppError(
          "CONFLICT",
          "The policy kept changing while this request was previewed; nothing was saved. Try again.",
        );
      }
    }
  }
}

class PreviewOutdated extends Error {
  constructor() {
    super("the policy changed during the preview");
  }
}
