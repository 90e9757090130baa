import { ZDryRunCandidate } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView, toJson } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  assertNotStaged,
  type CandidateRecord,
  candidateEntity,
  candidateSelect,
  toCandidateRecord,
} from "./candidate-record";

export const ZUpdateCandidateOptions = z
  .strictObject({
    id: ZDryRunCandidate.shape.id,
    expectedVersion: ZExpectedVersion,
    target: ZDryRunCandidate.shape.target.optional(),
    limit: ZDryRunCandidate.shape.limit.optional(),
  })
  .refine((options) => options.target !== undefined || options.limit !== undefined, {
    error: "give at least one field to change: target, limit",
  });
export type UpdateCandidateOptions = z.input<typeof ZUpdateCandidateOptions>;

export async function updateCandidate(
  options: UpdateCandidateOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly candidate: CandidateRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZUpdateCandidateOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "candidate.update",
    entityType: "candidate",
    affectsSnapshot: true,
    focus: { collection: "dryRunCandidates", id: input.id },
    write: versionedWrite(candidateEntity(input.id), input.expectedVersion, async (tx, current) => {
      assertNotStaged(current);
      const row = await tx.dryRunCandidate.update({
        where: { id: input.id },
        data: {
          target: input.target,
          limit: input.limit === undefined ? undefined : toJson(input.limit),
          version: { increment: 1 },
        },
        select: candidateSelect,
      });
      const candidate = toCandidateRecord(row);
      return { after: auditView(candidate), value: { candidate } };
    }),
  });
}
