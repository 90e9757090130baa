import { Prisma } from "@/lib/generated/prisma/client";
import { systemActor } from "../change-context";
import type { ControlDeps } from "../deps";
import { runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { isChangedSinceRead, versionedWrite } from "../versioned-write";
import {
  outboundBudgetEntity,
  outboundBudgetSelect,
  toOutboundBudgetRecord,
} from "./outbound-budget-record";

export interface RecordOutboundRaiseExpiriesOptions {
  /** Most expiries recorded per call; the worker calls again while it returns this many. @default 100 */
  readonly limit?: number;
  /** Only this budget's (what a new raise of it records first). @default every budget */
  readonly name?: string;
}

/** The budget's raise expiry was recorded by someone else, or the raise changed meanwhile. */
class NotDue extends Error {}

/**
 * Writes an `outbound-budget.expire-raise` audit entry, by the system actor, for each outbound
 * budget whose raise reached its expiry, and takes the raise out of the budget in the same
 * transaction: the raise leaving the budget is the mark that its expiry was recorded, so each is
 * recorded once, as `record-descriptor-raise-expiries.ts` does for raises of descriptor values
 * (the same worker job runs both, and the incidents'). Enforcers stop applying a raise at its
 * expiry by their own clock; the version this publishes only drops a raise they already ignore.
 * Returns the names of the budgets recorded, oldest expiry first.
 */
export async function recordOutboundRaiseExpiries(
  deps: ControlDeps,
  options: RecordOutboundRaiseExpiriesOptions = {},
): Promise<string[]> {
  const nowMs = deps.clock.nowMs();
  // Few budgets hold raises (at most 500 budgets in a policy): the expiry is compared here.
  const rows = await deps.db.outboundBudget.findMany({
    where: {
      NOT: { raise: { equals: Prisma.DbNull } },
      ...(options.name === undefined ? {} : { name: options.name }),
    },
    orderBy: { name: "asc" },
    select: outboundBudgetSelect,
  });
  const due = rows
    .map(toOutboundBudgetRecord)
    .flatMap((budget) =>
      budget.raise !== null && Date.parse(budget.raise.expiresAt) <= nowMs
        ? [{ budget, expiresAt: budget.raise.expiresAt }]
        : [],
    )
    .sort((a, b) => Date.parse(a.expiresAt) - Date.parse(b.expiresAt))
    .slice(0, options.limit ?? 100);
  const recorded: string[] = [];
  for (const { budget, expiresAt } of due) {
    try {
      await runPolicyChange(
        deps,
        {
          actor: systemActor("outbound raise expiry"),
          reason: `the raise of outbound budget ${budget.name} reached its expiry at ${expiresAt}`,
        },
        {
          action: "outbound-budget.expire-raise",
          entityType: "outbound-budget",
          affectsSnapshot: true,
          focus: { collection: "outboundBudgets", id: budget.name },
          write: versionedWrite(
            outboundBudgetEntity(budget.name),
            budget.version,
            async (tx, current) => {
              if (current.raise?.expiresAt !== expiresAt) throw new NotDue();
              const row = await tx.outboundBudget.update({
                where: { name: budget.name },
                data: { raise: Prisma.DbNull, version: { increment: 1 } },
                select: outboundBudgetSelect,
              });
              return { after: auditView(toOutboundBudgetRecord(row)), value: {} };
            },
          ),
        },
      );
      recorded.push(budget.name);
    } catch (error: unknown) {
      // Changed or deleted since it was read: the next call reads it again.
      if (error instanceof NotDue) continue;
      if (isChangedSinceRead(error)) continue;
      throw error;
    }
  }
  return recorded;
}
