import type { ReadDeps } from "../deps";
import {
  type OutboundBudgetRecord,
  outboundBudgetSelect,
  toOutboundBudgetRecord,
} from "./outbound-budget-record";

/** Every outbound budget, by name. */
export async function listOutboundBudgets(deps: ReadDeps): Promise<OutboundBudgetRecord[]> {
  const rows = await deps.db.outboundBudget.findMany({
    orderBy: { name: "asc" },
    select: outboundBudgetSelect,
  });
  return rows.map(toOutboundBudgetRecord);
}
