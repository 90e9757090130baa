import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { refuseIneligibleDecider } from "./approve-change-request";
import { type ChangeRequestRecord, ZChangeRequestId } from "./change-request-record";
import { decideChangeRequest } from "./decide-change-request";
import { findChangeRequest } from "./find-change-request";

export const ZDecideChangeRequestOptions = z.strictObject({
  id: ZChangeRequestId,
  expectedVersion: ZExpectedVersion,
});
export type DecideChangeRequestOptions = z.input<typeof ZDecideChangeRequestOptions>;

/**
 * Rejects a pending request; the context's reason is the rejection's, shown to the author. The
 * same people may reject as may approve (a signed-in operator other than the author).
 */
export async function rejectChangeRequest(
  options: DecideChangeRequestOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly changeRequest: ChangeRequestRecord; readonly auditEntryId: string }> {
  const { input, ctx } = parseChange(ZDecideChangeRequestOptions, options, context);
  const request = await findChangeRequest(deps.db, input.id, deps.clock.nowMs());
  refuseIneligibleDecider(request, ctx.actor, "reject");
  return decideChangeRequest(input.id, input.expectedVersion, "rejected", ctx, deps);
}
