import type { ChangeContext } from "../change-context";
import { parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { type StagedChangeVerbOptions, ZStagedChangeVerbOptions } from "./pause-staged-change";
import { runStagedChangeVerb } from "./run-staged-change-verb";
import { assertState } from "./staged-change-record";

/** Continues a paused staged change; the time it was paused does not count toward the dwell. */
export async function resumeStagedChange(
  options: StagedChangeVerbOptions,
  context: ChangeContext,
  deps: ControlDeps,
) {
  const { input, ctx } = parseChange(ZStagedChangeVerbOptions, options, context);
  return runStagedChangeVerb(deps, ctx, input, {
    action: "staged-change.resume",
    affectsSnapshot: false,
    async apply(_tx, current, nowMs) {
      assertState(current, ["paused"], "resumed");
      const pausedAtMs = current.pausedAt === null ? nowMs : Date.parse(current.pausedAt);
      const heldMs = Math.max(0, pausedAtMs - Date.parse(current.stepStartedAt));
      return {
        data: {
          state: "running",
          pausedAt: null,
          stepStartedAt: new Date(nowMs - heldMs),
          version: { increment: 1 },
        },
      };
    },
  });
}
