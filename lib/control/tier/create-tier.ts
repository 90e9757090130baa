import { ZTier } from "@limitplane/enforcer/policy";
import type { z } from "zod";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { translateDbError } from "../prisma-errors";
import { auditView, toJson } from "../stored";
import { type TierRecord, tierLabel, tierSelect, toTierRecord } from "./tier-record";

/** A new tier: its name, an optional display name and its account limit (see `ZTier`). */
export type CreateTierOptions = z.input<typeof ZTier>;

export async function createTier(
  options: CreateTierOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly tier: TierRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZTier, options, context);
  return runPolicyChange(deps, ctx, {
    action: "tier.create",
    entityType: "tier",
    affectsSnapshot: true,
    focus: { collection: "tiers", id: input.name },
    async write(tx) {
      const existing = await tx.tier.findUnique({
        where: { name: input.name },
        select: { name: true },
      });
      if (existing !== null) {
        throw new AppError(
          "CONFLICT",
          `${tierLabel(input.name)} already exists; edit it instead.`,
          {
            fieldErrors: [{ path: "name", message: `"${input.name}" is already taken` }],
          },
        );
      }
      const row = await tx.tier
        .create({
          data: { name: input.name, displayName: input.displayName, limit: toJson(input.limit) },
          select: tierSelect,
        })
        .catch((error: unknown) => {
          throw translateDbError(error, { entity: "Tier", key: input.name });
        });
      const tier = toTierRecord(row);
      return {
        entityId: tier.name,
        customerId: null,
        before: null,
        after: auditView(tier),
        value: { tier },
      };
    },
  });
}
