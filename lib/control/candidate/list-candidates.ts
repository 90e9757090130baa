import type { ReadDeps } from "../deps";
import { type CandidateRecord, candidateSelect, toCandidateRecord } from "./candidate-record";

/** Every dry-run candidate, by id. */
export async function listCandidates(deps: ReadDeps): Promise<CandidateRecord[]> {
  const rows = await deps.db.dryRunCandidate.findMany({
    orderBy: { id: "asc" },
    select: candidateSelect,
  });
  return rows.map(toCandidateRecord);
}
