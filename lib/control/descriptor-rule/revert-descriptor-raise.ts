import { ZDescriptorRaise, ZDescriptorRule } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  type DescriptorRuleRecord,
  descriptorRuleData,
  descriptorRuleEntity,
  descriptorRuleSelect,
  toDescriptorRuleRecord,
} from "./descriptor-rule-record";

export const ZRevertDescriptorRaiseOptions = z.strictObject({
  ruleId: ZDescriptorRule.shape.id,
  raiseId: ZDescriptorRaise.shape.id,
  /** The rule's version as last read. */
  expectedVersion: ZExpectedVersion,
});
export type RevertDescriptorRaiseOptions = z.input<typeof ZRevertDescriptorRaiseOptions>;

/**
 * Ends a raise of one descriptor value now: the value goes back to the rule's limit, on the same
 * counter, from the version this publishes. Raises already past are left for the worker, which
 * records their expiry (`record-descriptor-raise-expiries.ts`).
 */
export async function revertDescriptorRaise(
  options: RevertDescriptorRaiseOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly rule: DescriptorRuleRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZRevertDescriptorRaiseOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "descriptor-rule.revert-raise",
    entityType: "descriptor-rule",
    affectsSnapshot: true,
    focus: { collection: "descriptorRules", id: input.ruleId },
    write: versionedWrite(
      descriptorRuleEntity(input.ruleId),
      input.expectedVersion,
      async (tx, current, nowMs) => {
        const raise = current.raises.find((item) => item.id === input.raiseId);
        if (raise === undefined || Date.parse(raise.expiresAt) <= nowMs) {
          throw new AppError(
            "NOT_FOUND",
            `Raise "${input.raiseId}" of descriptor rule "${input.ruleId}" is not current (it never existed, was reverted, or has expired).`,
          );
        }
        const raises = current.raises.filter((item) => item.id !== input.raiseId);
        const { version: _v, createdAt: _c, updatedAt: _u, ...rule } = current;
        const row = await tx.descriptorRule.update({
          where: { id: input.ruleId },
          data: { ...descriptorRuleData({ ...rule, raises }), version: { increment: 1 } },
          select: descriptorRuleSelect,
        });
        const updated = toDescriptorRuleRecord(row);
        return { after: auditView(updated), value: { rule: updated } };
      },
    ),
  });
}
