import { Prisma } from "@/lib/generated/prisma/client";
import type { ChangeContext } from "../change-context";
import { parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type StagedChangeVerbOptions, ZStagedChangeVerbOptions } from "./pause-staged-change";
import { runStagedChangeVerb, setSlice } from "./run-staged-change-verb";
import { assertState, stagedChangeLabel } from "./staged-change-record";

/**
 * Widens the slice to the next step's. The subjects already in stay in (`staged-slice.ts`), so
 * exactly the next slice moves to the new limit, continuing its counters. At the last step it is
 * refused: completing makes the change the policy (`completeStagedChange`).
 */
export async function advanceStagedChange(
  options: StagedChangeVerbOptions,
  context: ChangeContext,
  deps: ControlDeps,
) {
  const { input, ctx } = parseChange(ZStagedChangeVerbOptions, options, context);
  return runStagedChangeVerb(deps, ctx, input, {
    action: "staged-change.advance",
    affectsSnapshot: true,
    async apply(tx, current, nowMs) {
      assertState(current, ["running", "paused"], "advanced");
      const nextIndex = current.stepIndex + 1;
      const next = current.steps[nextIndex];
      if (next === undefined) {
        throw new AppError(
          "CONFLICT",
          `${stagedChangeLabel(current.id)} is at its last step; complete it to make it the policy.`,
        );
      }
      await setSlice(tx, current.id, next.sliceBasisPoints);
      return {
        data: {
          stepIndex: nextIndex,
          stepStartedAt: new Date(nowMs),
          state: "running",
          pausedAt: null,
          breachedWindows: 0,
          // The guard takes a new baseline for the new slice.
          guardState: Prisma.DbNull,
          holdNotifiedAt: null,
          version: { increment: 1 },
        },
      };
    },
  });
}
