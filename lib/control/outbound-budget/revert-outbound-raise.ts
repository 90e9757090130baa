import { isOutboundRaiseActive, ZOutboundBudget } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { Prisma } from "@/lib/generated/prisma/client";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  type OutboundBudgetRecord,
  outboundBudgetEntity,
  outboundBudgetLabel,
  outboundBudgetSelect,
  toOutboundBudgetRecord,
} from "./outbound-budget-record";

export const ZRevertOutboundRaiseOptions = z.strictObject({
  name: ZOutboundBudget.shape.name,
  /** The budget's version as last read. */
  expectedVersion: ZExpectedVersion,
});
export type RevertOutboundRaiseOptions = z.input<typeof ZRevertOutboundRaiseOptions>;

/**
 * Ends a budget's current raise now: its own limit and cap apply again from the version this
 * publishes. A raise already past is left for the worker, which records its expiry
 * (`record-outbound-raise-expiries.ts`).
 */
export async function revertOutboundRaise(
  options: RevertOutboundRaiseOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly budget: OutboundBudgetRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZRevertOutboundRaiseOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "outbound-budget.revert-raise",
    entityType: "outbound-budget",
    affectsSnapshot: true,
    focus: { collection: "outboundBudgets", id: input.name },
    write: versionedWrite(
      outboundBudgetEntity(input.name),
      input.expectedVersion,
      async (tx, current, nowMs) => {
        if (current.raise === null || !isOutboundRaiseActive(current.raise, nowMs)) {
          throw new AppError(
            "NOT_FOUND",
            `${outboundBudgetLabel(input.name)} has no current raise (it was never raised, was reverted, or has expired).`,
          );
        }
        const row = await tx.outboundBudget.update({
          where: { name: input.name },
          data: { raise: Prisma.DbNull, version: { increment: 1 } },
          select: outboundBudgetSelect,
        });
        const budget = toOutboundBudgetRecord(row);
        return { after: auditView(budget), value: { budget } };
      },
    ),
  });
}
