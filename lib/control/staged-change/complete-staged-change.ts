import { findCandidate } from "../candidate/candidate-record";
import { replaceTargetRule } from "../candidate/promote-candidate";
import type { ChangeContext } from "../change-context";
import { parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type StagedChangeVerbOptions, ZStagedChangeVerbOptions } from "./pause-staged-change";
import { runStagedChangeVerb } from "./run-staged-change-verb";
import { assertState, endedData, stagedChangeLabel } from "./staged-change-record";

/**
 * Makes a staged change at its last step (100 %) the policy: the new limit replaces the rule it
 * targeted (keeping its failure policy, as a promotion does) and the candidate is removed. The
 * audit entry carries the rule as it was and as it is now.
 */
export async function completeStagedChange(
  options: StagedChangeVerbOptions,
  context: ChangeContext,
  deps: ControlDeps,
) {
  const { input, ctx } = parseChange(ZStagedChangeVerbOptions, options, context);
  return runStagedChangeVerb(deps, ctx, input, {
    action: "staged-change.complete",
    affectsSnapshot: true,
    async apply(tx, current, nowMs) {
      assertState(current, ["running", "paused"], "completed");
      if (current.stepIndex !== current.steps.length - 1) {
        throw new AppError(
          "CONFLICT",
          `${stagedChangeLabel(current.id)} is at step ${current.stepIndex + 1} of ${current.steps.length}; only the last step can complete.`,
        );
      }
      const candidate = await findCandidate(tx, current.id);
      const rule = await replaceTargetRule(tx, candidate);
      await tx.dryRunCandidate.delete({ where: { id: current.id }, select: { id: true } });
      return {
        data: endedData(
          "completed",
          `completed: ${current.target} is now the new limit`,
          null,
          nowMs,
        ),
        extra: { rule },
      };
    },
  });
}
