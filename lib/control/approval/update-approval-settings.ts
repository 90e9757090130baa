import { z } from "zod";
import type { AuditReceipt } from "../audit/run-audited-change";
import { runAuditedChange } from "../audit/run-audited-change";
import { type ChangeContext, parseChange } from "../change-context";
import type { AuthDeps } from "../deps";
import { AppError } from "../errors";
import { lockOperatorChanges } from "../locks";
import { versionedWrite } from "../versioned-write";
import {
  type ApprovalSettingsRecord,
  approvalSettingsEntity,
  approvalSettingsSelect,
  countEligibleApprovers,
} from "./approval-settings-record";

const HOUR_MS = 3_600_000;
/** Fewer than this many operators who may approve, and approvals cannot be turned on. */
export const MIN_ELIGIBLE_APPROVERS = 2;

export const ZUpdateApprovalSettingsOptions = z
  .strictObject({
    /** 0 before the settings were first saved. */
    expectedVersion: z
      .number({ error: "expectedVersion is required: the version of the settings you read" })
      .int({ error: "expectedVersion must be a whole number" })
      .min(0, { error: "expectedVersion must be at least 0" })
      .max(2_147_483_647, { error: "expectedVersion is too large" }),
    isEnabled: z.boolean({ error: "isEnabled must be true or false" }).optional(),
    limitDecreasePercent: z
      .number({ error: "limitDecreasePercent must be a number of percent" })
      .int({ error: "limitDecreasePercent must be a whole number of percent" })
      .min(0, { error: "limitDecreasePercent must be at least 0 (every decrease)" })
      .max(99, { error: "limitDecreasePercent must be at most 99" })
      .optional(),
    isCeilingChangeGated: z
      .boolean({ error: "isCeilingChangeGated must be true or false" })
      .optional(),
    isDeletionGated: z.boolean({ error: "isDeletionGated must be true or false" }).optional(),
    importChangedEntries: z
      .number({ error: "importChangedEntries must be a number of entries" })
      .int({ error: "importChangedEntries must be a whole number" })
      .min(0, { error: "importChangedEntries must be at least 0" })
      .max(10_000, { error: "importChangedEntries must be at most 10000" })
      .optional(),
    requestLifetimeMs: z
      .number({ error: "requestLifetimeMs must be a number of milliseconds" })
      .int({ error: "requestLifetimeMs must be a whole number of milliseconds" })
      .min(60_000, { error: "requestLifetimeMs must be at least 60000 (one minute)" })
      .max(30 * 24 * HOUR_MS, { error: "requestLifetimeMs must be at most 2592000000 (30 days)" })
      .optional(),
  })
  .refine((options) => Object.keys(options).some((key) => key !== "expectedVersion"), {
    error:
      "give at least one field to change: isEnabled, limitDecreasePercent, isCeilingChangeGated, isDeletionGated, importChangedEntries, requestLifetimeMs",
  });
export type UpdateApprovalSettingsOptions = z.input<typeof ZUpdateApprovalSettingsOptions>;

/**
 * Changes which policy changes need a second person. Turning approvals on while fewer than
 * {@link MIN_ELIGIBLE_APPROVERS} enabled operators may approve is refused (nobody could approve
 * the author's request); counted under the operator-change lock, so a concurrent disable is seen.
 */
export async function updateApprovalSettings(
  options: UpdateApprovalSettingsOptions,
  context: ChangeContext,
  deps: Pick<AuthDeps, "db" | "clock" | "auditKey">,
): Promise<{ readonly settings: ApprovalSettingsRecord } & AuditReceipt> {
  const { input, ctx } = parseChange(ZUpdateApprovalSettingsOptions, options, context);
  const { expectedVersion, ...change } = input;
  return runAuditedChange(deps, ctx, {
    action: "approval-settings.update",
    entityType: "approval-settings",
    lock: lockOperatorChanges,
    write: versionedWrite(approvalSettingsEntity(), expectedVersion, async (tx, current) => {
      const isEnabled = change.isEnabled ?? current.isEnabled;
      if (isEnabled && !current.isEnabled) {
        const eligible = await countEligibleApprovers(tx);
        if (eligible < MIN_ELIGIBLE_APPROVERS) {
          throw new AppError(
            "CONFLICT",
            `Approvals need at least ${MIN_ELIGIBLE_APPROVERS} enabled admins, since the author of a change may not approve it; there ${eligible === 1 ? "is" : "are"} ${eligible}. Add or enable another admin first.`,
            { details: { eligibleApprovers: eligible, required: MIN_ELIGIBLE_APPROVERS } },
          );
        }
      }
      const data = { ...change, version: { increment: 1 } };
      const row = await tx.approvalSettings.upsert({
        where: { id: 1 },
        create: { ...change, id: 1, version: 1 },
        update: data,
        select: approvalSettingsSelect,
      });
      const settings: ApprovalSettingsRecord = {
        ...row,
        createdAt: row.createdAt.toISOString(),
        updatedAt: row.updatedAt.toISOString(),
      };
      const { createdAt: _c, updatedAt: _u, ...after } = settings;
      return { after, value: { settings } };
    }),
  });
}
