import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { runStagedChangeVerb } from "./run-staged-change-verb";
import { assertState } from "./staged-change-record";

export const ZStagedChangeVerbOptions = z.strictObject({
  id: z.string({ error: "id is required" }).min(1, { error: "id must not be empty" }),
  expectedVersion: ZExpectedVersion,
});
export type StagedChangeVerbOptions = z.input<typeof ZStagedChangeVerbOptions>;

/**
 * Holds a running staged change at its step: the slice keeps the new limit, the worker neither
 * advances it nor counts its dwell time. The guard keeps watching: a paused change still reverts.
 */
export async function pauseStagedChange(
  options: StagedChangeVerbOptions,
  context: ChangeContext,
  deps: ControlDeps,
) {
  const { input, ctx } = parseChange(ZStagedChangeVerbOptions, options, context);
  return runStagedChangeVerb(deps, ctx, input, {
    action: "staged-change.pause",
    affectsSnapshot: false,
    async apply(_tx, current, nowMs) {
      assertState(current, ["running"], "paused");
      return { data: { state: "paused", pausedAt: new Date(nowMs), version: { increment: 1 } } };
    },
  });
}
