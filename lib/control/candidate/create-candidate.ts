import { randomBytes } from "node:crypto";
import { ZDryRunCandidate } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView, toJson } from "../stored";
import {
  type CandidateRecord,
  candidateLabel,
  candidateSelect,
  toCandidateRecord,
} from "./candidate-record";

export const ZCreateCandidateOptions = z.strictObject({
  /** Generated (`cand-` and random hex) when not given. */
  id: ZDryRunCandidate.shape.id.optional(),
  target: ZDryRunCandidate.shape.target,
  limit: ZDryRunCandidate.shape.limit,
});
/** A limit to run in dry-run next to the rule it would replace (`target`, a scope). */
export type CreateCandidateOptions = z.input<typeof ZCreateCandidateOptions>;

export async function createCandidate(
  options: CreateCandidateOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly candidate: CandidateRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZCreateCandidateOptions, options, context);
  const id = input.id ?? `cand-${randomBytes(6).toString("hex")}`;
  return runPolicyChange(deps, ctx, {
    action: "candidate.create",
    entityType: "candidate",
    affectsSnapshot: true,
    focus: { collection: "dryRunCandidates", id },
    async write(tx) {
      const existing = await tx.dryRunCandidate.findUnique({ where: { id }, select: { id: true } });
      if (existing !== null) {
        throw new AppError("CONFLICT", `${candidateLabel(id)} already exists; choose another id.`, {
          fieldErrors: [{ path: "id", message: `"${id}" is already taken` }],
        });
      }
      const row = await tx.dryRunCandidate.create({
        data: { id, target: input.target, limit: toJson(input.limit), createdBy: ctx.actor.name },
        select: candidateSelect,
      });
      const candidate = toCandidateRecord(row);
      return {
        entityId: id,
        customerId: null,
        before: null,
        after: auditView(candidate),
        value: { candidate },
      };
    },
  });
}
