import { isOutboundRaiseActive, type TOutboundRaise } from "@limitplane/enforcer/policy";
import { Prisma } from "@/lib/generated/prisma/client";
import type { ClockedReadDeps } from "../deps";
import {
  type OutboundBudgetRecord,
  outboundBudgetSelect,
  toOutboundBudgetRecord,
} from "./outbound-budget-record";

/** A budget with the raise in force on it. */
export type RaisedOutboundBudget = OutboundBudgetRecord & { readonly raise: TOutboundRaise };

/** Every outbound budget raised at `nowMs`, soonest expiry first: what the overrides page lists. */
export async function listOutboundRaises(
  deps: ClockedReadDeps,
  nowMs: number = deps.clock.nowMs(),
): Promise<RaisedOutboundBudget[]> {
  const rows = await deps.db.outboundBudget.findMany({
    where: { NOT: { raise: { equals: Prisma.DbNull } } },
    orderBy: { name: "asc" },
    select: outboundBudgetSelect,
  });
  return rows
    .map(toOutboundBudgetRecord)
    .flatMap((budget) =>
      budget.raise !== null && isOutboundRaiseActive(budget.raise, nowMs)
        ? [{ ...budget, raise: budget.raise }]
        : [],
    )
    .sort((a, b) => Date.parse(a.raise.expiresAt) - Date.parse(b.raise.expiresAt));
}
