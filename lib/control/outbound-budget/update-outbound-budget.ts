import { ZOutboundBudget } from "@limitplane/enforcer/policy";
import type { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  type OutboundBudgetRecord,
  outboundBudgetData,
  outboundBudgetEntity,
  outboundBudgetSelect,
  toOutboundBudgetRecord,
} from "./outbound-budget-record";

/**
 * A budget replaced whole (what PUT sends): fields left out take their defaults, as on create.
 * The name stays: a new name is a new budget. So does a raise (`raise` here is ignored): only
 * `raiseOutboundBudget`, its revert and its expiry change it.
 */
export const ZUpdateOutboundBudgetOptions = ZOutboundBudget.safeExtend({
  expectedVersion: ZExpectedVersion,
});
export type UpdateOutboundBudgetOptions = z.input<typeof ZUpdateOutboundBudgetOptions>;

export async function updateOutboundBudget(
  options: UpdateOutboundBudgetOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly budget: OutboundBudgetRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZUpdateOutboundBudgetOptions, options, context);
  const { expectedVersion, ...fields } = input;
  return runPolicyChange(deps, ctx, {
    action: "outbound-budget.update",
    entityType: "outbound-budget",
    affectsSnapshot: true,
    focus: { collection: "outboundBudgets", id: input.name },
    write: versionedWrite(
      outboundBudgetEntity(input.name),
      expectedVersion,
      async (tx, current) => {
        // The raise stays: only a raise, its revert and its expiry change it.
        const row = await tx.outboundBudget.update({
          where: { name: input.name },
          data: {
            ...outboundBudgetData({ ...fields, raise: current.raise }),
            version: { increment: 1 },
          },
          select: outboundBudgetSelect,
        });
        const budget = toOutboundBudgetRecord(row);
        return { after: auditView(budget), value: { budget } };
      },
    ),
  });
}
