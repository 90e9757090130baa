/**
 * An import replaces the whole policy, while a live staged change carries one rule's new limit on
 * its dry-run candidate and compares it with the rule's limit as it stands. An import that
 * changes that rule's limit, or removes or rewrites the candidate, would leave the staged change
 * judging against a limit it did not start from, or with no slice to widen. Such an import is
 * refused, naming each staged change and what the file does to it; nothing is written.
 */
import {
  canonicalJson,
  limitAtScope,
  type PolicyRules,
  type TPolicyDocument,
} from "@limitplane/enforcer/policy";
import { AppError, type FieldError } from "../errors";
import type { Tx } from "../policy/run-policy-change";
import { parseStoredPolicy, readStoredPolicy } from "../policy/stored-policy";
import { LIVE_STATES, stagedChangeLabel } from "./staged-change-record";

export async function refuseImportOverStagedChanges(
  tx: Tx,
  doc: Omit<TPolicyDocument, "customers">,
  nowMs: number,
): Promise<void> {
  const live = await tx.stagedChange.findMany({
    where: { state: { in: [...LIVE_STATES] } },
    orderBy: { id: "asc" },
    select: { id: true, target: true },
  });
  if (live.length === 0) return;
  const candidates = await tx.dryRunCandidate.findMany({
    where: { id: { in: live.map((change) => change.id) } },
    select: { id: true, target: true, limit: true },
  });
  const stored = await readStoredPolicy(tx, {
    nowMs,
    scope: { kind: "core" },
    customers: "referenced",
  });
  const rules: PolicyRules | null = stored === null ? null : parseStoredPolicy(stored);
  const imported: PolicyRules = doc;
  const problems: FieldError[] = [];
  for (const change of live) {
    const label = stagedChangeLabel(change.id);
    const before = rules === null ? null : limitAtScope(rules, change.target);
    const after = limitAtScope(imported, change.target);
    if (canonicalJson(before) !== canonicalJson(after)) {
      problems.push({
        path: "policy",
        message: `the file changes the limit of ${change.target}, which ${label} is rolling out`,
      });
    }
    const candidate = candidates.find((row) => row.id === change.id);
    const index = doc.dryRunCandidates.findIndex((candidate) => candidate.id === change.id);
    const listed = doc.dryRunCandidates[index];
    if (listed === undefined) {
      problems.push({
        path: "dryRunCandidates",
        message: `the file leaves out dry-run candidate "${change.id}", which carries ${label}`,
      });
    } else if (
      candidate === undefined ||
      listed.target !== candidate.target ||
      canonicalJson(listed.limit) !== canonicalJson(candidate.limit)
    ) {
      problems.push({
        path: `dryRunCandidates[${index}]`,
        message: `the file rewrites dry-run candidate "${change.id}", which carries ${label}`,
      });
    }
  }
  if (problems.length === 0) return;
  throw new AppError(
    "CONFLICT",
    `Nothing was imported: ${problems.map((problem) => problem.message).join("; ")}. Complete or abort the staged change first, or keep its rule and candidate in the file as they stand.`,
    {
      fieldErrors: problems,
      details: { stagedChanges: live.map((change) => change.id) },
    },
  );
}
