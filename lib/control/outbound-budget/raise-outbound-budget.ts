import {
  checkOutboundRaise,
  fieldErrorsFromZod,
  isOutboundRaiseActive,
  ZOutboundRaise,
} from "@limitplane/enforcer/policy";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError, validationError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { findSettings } from "../settings/settings-record";
import { auditView, jsonColumn } from "../stored";
import {
  findOutboundBudget,
  type OutboundBudgetRecord,
  outboundBudgetLabel,
  outboundBudgetSelect,
  toOutboundBudgetRecord,
} from "./outbound-budget-record";
import {
  type RaiseOutboundBudgetOptions,
  raiseOfRequest,
  toRequestFieldErrors,
  ZRaiseOutboundBudgetOptions,
} from "./raise-outbound-budget-options";
import { recordOutboundRaiseExpiries } from "./record-outbound-raise-expiries";

export {
  type RaiseOutboundBudgetOptions,
  ZRaiseOutboundBudgetOptions,
} from "./raise-outbound-budget-options";

/**
 * Raises (or cuts) an outbound budget for a while, as an incident override does for a customer:
 * "the provider raised our quota for the day". From now until `until` (or `durationMinutes` from
 * now) every enforcer applies the raised limit and concurrency cap on the budget's own counters,
 * then the budget's own again by its wall clock, with no new version needed. Bounded by the
 * policy's incident guardrails; the change's reason is the raise's. Refused while another raise
 * of the budget is current (revert it first).
 */
export async function raiseOutboundBudget(
  options: RaiseOutboundBudgetOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly budget: OutboundBudgetRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZRaiseOutboundBudgetOptions, options, context);
  // A past raise not yet recorded gets its expiry entry first: each expiry is recorded once.
  await recordOutboundRaiseExpiries(deps, { name: input.name });
  const parsed = ZOutboundRaise.safeParse(
    raiseOfRequest(input, { nowMs: deps.clock.nowMs(), owner: ctx.actor.name, reason: ctx.reason }),
  );
  if (!parsed.success) {
    throw validationError(toRequestFieldErrors(fieldErrorsFromZod(parsed.error), input));
  }
  const raise = parsed.data;
  return runPolicyChange(deps, ctx, {
    action: "outbound-budget.raise",
    entityType: "outbound-budget",
    affectsSnapshot: true,
    focus: { collection: "outboundBudgets", id: input.name },
    async write(tx, changeNowMs) {
      const current = await findOutboundBudget(tx, input.name);
      if (current.raise !== null && isOutboundRaiseActive(current.raise, changeNowMs)) {
        throw new AppError(
          "CONFLICT",
          `${outboundBudgetLabel(input.name)} is already raised until ${current.raise.expiresAt} by ${current.raise.owner}; revert that raise first.`,
          { details: { current } },
        );
      }
      const { guardrails } = await findSettings(tx);
      const beyond = checkOutboundRaise(raise, current, { guardrails, nowMs: changeNowMs });
      if (beyond.length > 0) throw validationError(toRequestFieldErrors(beyond, input));
      const row = await tx.outboundBudget.update({
        where: { name: input.name },
        data: { raise: jsonColumn(raise), version: { increment: 1 } },
        select: outboundBudgetSelect,
      });
      const budget = toOutboundBudgetRecord(row);
      return {
        entityId: budget.name,
        customerId: null,
        before: auditView(current),
        after: auditView(budget),
        value: { budget },
      };
    },
  });
}
