import { ZOutboundBudget } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { versionedWrite } from "../versioned-write";
import { type OutboundBudgetRecord, outboundBudgetEntity } from "./outbound-budget-record";

export const ZDeleteOutboundBudgetOptions = z.strictObject({
  name: ZOutboundBudget.shape.name,
  expectedVersion: ZExpectedVersion,
});
export type DeleteOutboundBudgetOptions = z.input<typeof ZDeleteOutboundBudgetOptions>;

/**
 * Removes a budget: a limiter that reads budgets from the policy then refuses its scope with
 * `unknown-scope` (or falls back to a budget of that name in its code).
 */
export async function deleteOutboundBudget(
  options: DeleteOutboundBudgetOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly budget: OutboundBudgetRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZDeleteOutboundBudgetOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "outbound-budget.delete",
    entityType: "outbound-budget",
    affectsSnapshot: true,
    focus: null,
    write: versionedWrite(
      outboundBudgetEntity(input.name),
      input.expectedVersion,
      async (tx, current) => {
        await tx.outboundBudget.delete({ where: { name: input.name }, select: { name: true } });
        return { after: null, value: { budget: current } };
      },
    ),
  });
}
