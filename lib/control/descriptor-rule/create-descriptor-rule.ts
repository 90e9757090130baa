import { ZDescriptorRule } from "@limitplane/enforcer/policy";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import {
  type DescriptorRuleRecord,
  descriptorRuleData,
  descriptorRuleLabel,
  descriptorRuleSelect,
  toDescriptorRuleRecord,
} from "./descriptor-rule-record";

export const ZCreateDescriptorRuleOptions = ZDescriptorRule;
export type CreateDescriptorRuleOptions = import("zod").input<typeof ZDescriptorRule>;

/** Adds a descriptor rule; its pattern may not be another rule's in the same domain. */
export async function createDescriptorRule(
  options: CreateDescriptorRuleOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly rule: DescriptorRuleRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZDescriptorRule, options, context);
  return runPolicyChange(deps, ctx, {
    action: "descriptor-rule.create",
    entityType: "descriptor-rule",
    affectsSnapshot: true,
    focus: { collection: "descriptorRules", id: input.id },
    async write(tx) {
      const existing = await tx.descriptorRule.findUnique({
        where: { id: input.id },
        select: { id: true },
      });
      if (existing !== null) {
        throw new AppError(
          "CONFLICT",
          `${descriptorRuleLabel(input.id)} already exists; choose another id.`,
          { fieldErrors: [{ path: "id", message: `"${input.id}" is already taken` }] },
        );
      }
      const row = await tx.descriptorRule.create({
        data: { id: input.id, ...descriptorRuleData(input) },
        select: descriptorRuleSelect,
      });
      const rule = toDescriptorRuleRecord(row);
      return {
        entityId: input.id,
        customerId: null,
        before: null,
        after: auditView(rule),
        value: { rule },
      };
    },
  });
}
