/** Writing outbound budget rows: what the policy import uses. */
import { canonicalJson, type TOutboundBudget, ZOutboundBudget } from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { outboundBudgetData, outboundBudgetDocumentSelect } from "./outbound-budget-record";

type Tx = Prisma.TransactionClient;

/**
 * Makes the stored budgets exactly `budgets`: deletes the others, creates the new, and updates
 * (version + 1) those that differ. Returns how many rows changed.
 */
export async function replaceOutboundBudgets(
  tx: Tx,
  budgets: readonly TOutboundBudget[],
): Promise<number> {
  const names = budgets.map((budget) => budget.name);
  let changed = (await tx.outboundBudget.deleteMany({ where: { name: { notIn: names } } })).count;
  const rows = await tx.outboundBudget.findMany({
    where: { name: { in: names } },
    select: outboundBudgetDocumentSelect,
  });
  const stored = new Map(rows.map((row) => [row.name, row]));
  for (const budget of budgets) {
    const row = stored.get(budget.name);
    if (row === undefined) {
      await tx.outboundBudget.create({
        data: { name: budget.name, ...outboundBudgetData(budget) },
        select: { name: true },
      });
      changed++;
      continue;
    }
    const parsed = ZOutboundBudget.safeParse(row);
    if (parsed.success && canonicalJson(parsed.data) === canonicalJson(budget)) continue;
    await tx.outboundBudget.update({
      where: { name: budget.name },
      data: { ...outboundBudgetData(budget), version: { increment: 1 } },
      select: { name: true },
    });
    changed++;
  }
  return changed;
}
