import { getControlDeps, type ReadDeps } from "../control-deps";
import { type CandidateRecord, candidateSelect, toCandidateRecord } from "./candidate-record";

/** Every dry-run candidate, by id. */
export async function listCandidates(
  deps: ReadDeps = getControlDeps(),
): Promise<CandidateRecord[]> {
  const rows = await deps.db.dryRunCandidate.findMany({
    orderBy: { id: "asc" },
    select: candidateSelect,
  });
  return rows.map(toCandidateRecord);
}
