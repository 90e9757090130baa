import { ZDryRunCandidate } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { versionedWrite } from "../versioned-write";
import { assertNotStaged, type CandidateRecord, candidateEntity } from "./candidate-record";

export const ZDiscardCandidateOptions = z.strictObject({
  id: ZDryRunCandidate.shape.id,
  expectedVersion: ZExpectedVersion,
});
export type DiscardCandidateOptions = z.input<typeof ZDiscardCandidateOptions>;

/** Stops a dry-run candidate; the rule it targeted stays as it is. */
export async function discardCandidate(
  options: DiscardCandidateOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly candidate: CandidateRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZDiscardCandidateOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "candidate.discard",
    entityType: "candidate",
    affectsSnapshot: true,
    focus: null,
    write: versionedWrite(candidateEntity(input.id), input.expectedVersion, async (tx, current) => {
      assertNotStaged(current);
      await tx.dryRunCandidate.delete({ where: { id: input.id }, select: { id: true } });
      return { after: null, value: { candidate: current } };
    }),
  });
}
