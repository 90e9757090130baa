import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { runStagedChangeVerb } from "./run-staged-change-verb";
import { assertState, endedData, LIVE_STATES, withdrawSlice } from "./staged-change-record";

/** What tripped the guard: each window's figures, oldest first. */
export const ZGuardWindowFigures = z.strictObject({
  windowEndMs: z.number().int(),
  sliceRequests: z.number().int().min(0),
  sliceRejected: z.number().int().min(0),
  restRequests: z.number().int().min(0),
  restRejected: z.number().int().min(0),
});
export type GuardWindowFigures = z.output<typeof ZGuardWindowFigures>;

export const ZRevertStagedChangeOptions = z.strictObject({
  id: z.string().min(1),
  expectedVersion: ZExpectedVersion,
  /** Why, in words, as the console and the webhook show it. */
  why: z.string().min(1).max(1000),
  windows: z.array(ZGuardWindowFigures).min(1),
});
export type RevertStagedChangeOptions = z.input<typeof ZRevertStagedChangeOptions>;

/**
 * The guard's revert: as an abort, by the system, with the figures that tripped it in the row and
 * in the audit entry.
 */
export async function revertStagedChange(
  options: RevertStagedChangeOptions,
  context: ChangeContext,
  deps: ControlDeps,
) {
  const { input, ctx } = parseChange(ZRevertStagedChangeOptions, options, context);
  return runStagedChangeVerb(deps, ctx, input, {
    action: "staged-change.revert",
    affectsSnapshot: true,
    async apply(tx, current, nowMs) {
      assertState(current, LIVE_STATES, "reverted");
      await withdrawSlice(tx, current);
      return { data: endedData("reverted", input.why, { windows: input.windows }, nowMs) };
    },
  });
}
