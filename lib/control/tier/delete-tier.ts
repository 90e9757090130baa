import { parseScope, ZTier } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange, type Tx } from "../policy/run-policy-change";
import { versionedWrite } from "../versioned-write";
import { type TierRecord, tierEntity, tierLabel } from "./tier-record";

export const ZDeleteTierOptions = z.strictObject({
  name: ZTier.shape.name,
  expectedVersion: ZExpectedVersion,
});
export type DeleteTierOptions = z.input<typeof ZDeleteTierOptions>;

/** How many referring customers a refusal names before it just counts. */
const NAMED_CUSTOMERS = 3;

/**
 * Deletes a tier nothing refers to. A tier still named by the default tier, an endpoint class's
 * per-tier limits, a dry-run candidate or any customer in the registry is refused with CONFLICT,
 * listing what refers to it (customers by a targeted query: the registry is never loaded).
 */
export async function deleteTier(
  options: DeleteTierOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly tier: TierRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZDeleteTierOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "tier.delete",
    entityType: "tier",
    affectsSnapshot: true,
    focus: null,
    write: versionedWrite(tierEntity(input.name), input.expectedVersion, async (tx, current) => {
      const referrers = await findTierReferrers(tx, input.name);
      if (referrers.length > 0) {
        throw new AppError(
          "CONFLICT",
          `${tierLabel(input.name)} is still used by ${referrers.join(", ")}; change or remove those first.`,
          { details: { referrers } },
        );
      }
      await tx.tier.delete({ where: { name: input.name }, select: { name: true } });
      return { after: null, value: { tier: current } };
    }),
  });
}

/** What refers to the tier, in words: the deletion is refused while any does (and its preview names them). */
export async function findTierReferrers(tx: Tx, name: string): Promise<string[]> {
  const [settings, endpointClasses, candidates, customers, customerCount] = await Promise.all([
    tx.policySettings.findUnique({ where: { id: 1 }, select: { defaultTier: true } }),
    tx.endpointClass.findMany({ orderBy: { name: "asc" }, select: { name: true, limits: true } }),
    tx.dryRunCandidate.findMany({ orderBy: { id: "asc" }, select: { id: true, target: true } }),
    tx.customer.findMany({
      where: { tier: name },
      orderBy: { id: "asc" },
      take: NAMED_CUSTOMERS,
      select: { id: true },
    }),
    tx.customer.count({ where: { tier: name } }),
  ]);
  const referrers: string[] = [];
  if (settings?.defaultTier === name) referrers.push("the settings (defaultTier)");
  for (const endpointClass of endpointClasses) {
    const limits = endpointClass.limits;
    if (typeof limits === "object" && limits !== null && !Array.isArray(limits) && name in limits) {
      referrers.push(`endpoint class "${endpointClass.name}" (limits.${name})`);
    }
  }
  for (const candidate of candidates) {
    const scope = parseScope(candidate.target);
    if (scope?.kind === "tier" && scope.tier === name) {
      referrers.push(`dry-run candidate "${candidate.id}" (target ${candidate.target})`);
    }
  }
  if (customerCount > 0) {
    const named = customers.map((customer) => `"${customer.id}"`).join(", ");
    referrers.push(
      customerCount <= NAMED_CUSTOMERS
        ? `${customerCount === 1 ? "customer" : "customers"} ${named}`
        : `${customerCount} customers (${named} and ${customerCount - NAMED_CUSTOMERS} more)`,
    );
  }
  return referrers;
}
