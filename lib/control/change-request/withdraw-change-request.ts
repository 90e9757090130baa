import type { ChangeContext } from "../change-context";
import { parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import type { ChangeRequestRecord } from "./change-request-record";
import { decideChangeRequest } from "./decide-change-request";
import { findChangeRequest } from "./find-change-request";
import {
  type DecideChangeRequestOptions,
  ZDecideChangeRequestOptions,
} from "./reject-change-request";

/** Withdraws a pending request: only its author may (the token that asked, or its creator). */
export async function withdrawChangeRequest(
  options: DecideChangeRequestOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly changeRequest: ChangeRequestRecord; readonly auditEntryId: string }> {
  const { input, ctx } = parseChange(ZDecideChangeRequestOptions, options, context);
  const request = await findChangeRequest(deps.db, input.id, deps.clock.nowMs());
  const isAuthor =
    (ctx.actor.type === request.author.type && ctx.actor.id === request.author.id) ||
    (ctx.actor.type === "operator" && ctx.actor.id === request.author.operatorId);
  if (!isAuthor) {
    throw new AppError(
      "FORBIDDEN",
      `Only the author (${request.author.name}) may withdraw this request; reject it instead.`,
      { details: { author: request.author.name } },
    );
  }
  return decideChangeRequest(input.id, input.expectedVersion, "withdrawn", ctx, deps);
}
