import { ZDescriptorRule } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { versionedWrite } from "../versioned-write";
import { type DescriptorRuleRecord, descriptorRuleEntity } from "./descriptor-rule-record";

export const ZDeleteDescriptorRuleOptions = z.strictObject({
  id: ZDescriptorRule.shape.id,
  expectedVersion: ZExpectedVersion,
});
export type DeleteDescriptorRuleOptions = z.input<typeof ZDeleteDescriptorRuleOptions>;

/** Removes a descriptor rule: what it matched falls back to the next less specific rule. */
export async function deleteDescriptorRule(
  options: DeleteDescriptorRuleOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly rule: DescriptorRuleRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZDeleteDescriptorRuleOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "descriptor-rule.delete",
    entityType: "descriptor-rule",
    affectsSnapshot: true,
    focus: null,
    write: versionedWrite(
      descriptorRuleEntity(input.id),
      input.expectedVersion,
      async (tx, current) => {
        await tx.descriptorRule.delete({ where: { id: input.id }, select: { id: true } });
        return { after: null, value: { rule: current } };
      },
    ),
  });
}
