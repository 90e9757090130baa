import type { ChangeContext } from "../change-context";
import { parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { type StagedChangeVerbOptions, ZStagedChangeVerbOptions } from "./pause-staged-change";
import { runStagedChangeVerb } from "./run-staged-change-verb";
import { assertState, endedData, LIVE_STATES, withdrawSlice } from "./staged-change-record";

/**
 * Stops a staged change: every subject goes back to the rule it targeted, which was never
 * changed. The slice's counters continue under the old limit, as on an edit.
 */
export async function abortStagedChange(
  options: StagedChangeVerbOptions,
  context: ChangeContext,
  deps: ControlDeps,
) {
  const { input, ctx } = parseChange(ZStagedChangeVerbOptions, options, context);
  return runStagedChangeVerb(deps, ctx, input, {
    action: "staged-change.abort",
    affectsSnapshot: true,
    async apply(tx, current, nowMs) {
      assertState(current, LIVE_STATES, "aborted");
      await withdrawSlice(tx, current);
      return {
        data: endedData("aborted", `aborted by ${ctx.actor.name}: ${ctx.reason}`, null, nowMs),
      };
    },
  });
}
