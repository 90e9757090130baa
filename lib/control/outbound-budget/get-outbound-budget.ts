import type { ReadDeps } from "../deps";
import { findOutboundBudget, type OutboundBudgetRecord } from "./outbound-budget-record";

/** One outbound budget, or NOT_FOUND. */
export async function getOutboundBudget(
  name: string,
  deps: ReadDeps,
): Promise<OutboundBudgetRecord> {
  return findOutboundBudget(deps.db, name);
}
