import { ZOutboundBudget } from "@limitplane/enforcer/policy";
import type { z } from "zod";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import {
  type OutboundBudgetRecord,
  outboundBudgetData,
  outboundBudgetLabel,
  outboundBudgetSelect,
  toOutboundBudgetRecord,
} from "./outbound-budget-record";

/** A new outbound budget (see `ZOutboundBudget`). */
export type CreateOutboundBudgetOptions = z.input<typeof ZOutboundBudget>;

/** Adds a budget callers wait for under the scope `outbound:<name>`. */
export async function createOutboundBudget(
  options: CreateOutboundBudgetOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly budget: OutboundBudgetRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZOutboundBudget, options, context);
  return runPolicyChange(deps, ctx, {
    action: "outbound-budget.create",
    entityType: "outbound-budget",
    affectsSnapshot: true,
    focus: { collection: "outboundBudgets", id: input.name },
    async write(tx) {
      const existing = await tx.outboundBudget.findUnique({
        where: { name: input.name },
        select: { name: true },
      });
      if (existing !== null) {
        throw new AppError(
          "CONFLICT",
          `${outboundBudgetLabel(input.name)} already exists; edit it instead.`,
          { fieldErrors: [{ path: "name", message: `"${input.name}" is already taken` }] },
        );
      }
      const row = await tx.outboundBudget.create({
        // A new budget starts without a raise: `raiseOutboundBudget` makes one, within guardrails.
        data: { name: input.name, ...outboundBudgetData({ ...input, raise: null }) },
        select: outboundBudgetSelect,
      });
      const budget = toOutboundBudgetRecord(row);
      return {
        entityId: budget.name,
        customerId: null,
        before: null,
        after: auditView(budget),
        value: { budget },
      };
    },
  });
}
