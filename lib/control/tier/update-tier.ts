import { ZTier } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView, toJson } from "../stored";
import { versionedWrite } from "../versioned-write";
import { type TierRecord, tierEntity, tierSelect, toTierRecord } from "./tier-record";

export const ZUpdateTierOptions = z
  .strictObject({
    name: ZTier.shape.name,
    expectedVersion: ZExpectedVersion,
    /** null clears it. */
    displayName: ZTier.shape.displayName.unwrap().optional(),
    limit: ZTier.shape.limit.optional(),
  })
  .refine((options) => options.displayName !== undefined || options.limit !== undefined, {
    error: "give at least one field to change: displayName, limit",
  });
/** The tier, the version the change is based on, and the fields to change. */
export type UpdateTierOptions = z.input<typeof ZUpdateTierOptions>;

export async function updateTier(
  options: UpdateTierOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly tier: TierRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZUpdateTierOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "tier.update",
    entityType: "tier",
    affectsSnapshot: true,
    focus: { collection: "tiers", id: input.name },
    write: versionedWrite(tierEntity(input.name), input.expectedVersion, async (tx) => {
      const row = await tx.tier.update({
        where: { name: input.name },
        data: {
          displayName: input.displayName,
          limit: input.limit === undefined ? undefined : toJson(input.limit),
          version: { increment: 1 },
        },
        select: tierSelect,
      });
      const tier = toTierRecord(row);
      return { after: auditView(tier), value: { tier } };
    }),
  });
}
