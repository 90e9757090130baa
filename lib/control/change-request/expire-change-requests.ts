import type { AuditedChangeDeps } from "../audit/run-audited-change";
import { systemActor } from "../change-context";
import { isAppError } from "../errors";
import { decideChangeRequest } from "./decide-change-request";

/**
 * The worker's sweep: each pending request past its expiry becomes `expired`, audited as the
 * system, with its webhook notice. A request decided meanwhile is skipped (the conditional
 * update finds it no longer pending). Returns how many expired.
 */
export async function expireChangeRequests(
  deps: AuditedChangeDeps,
  options: { readonly limit: number },
): Promise<number> {
  const due = await deps.db.changeRequest.findMany({
    where: { status: "pending", expiresAt: { lte: new Date(deps.clock.nowMs()) } },
    orderBy: { expiresAt: "asc" },
    take: options.limit,
    select: { id: true },
  });
  let expired = 0;
  for (const { id } of due) {
    try {
      await decideChangeRequest(
        id,
        null,
        "expired",
        { actor: systemActor("change-request expiry"), reason: "No decision before it expired" },
        deps,
      );
      expired++;
    } catch (error: unknown) {
      if (!isAppError(error)) throw error;
    }
  }
  return expired;
}
