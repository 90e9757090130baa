import { getControlDeps, type ReadDeps } from "../control-deps";
import { type CandidateRecord, findCandidate } from "./candidate-record";

/** One dry-run candidate, or NOT_FOUND. */
export async function getCandidate(
  id: string,
  deps: ReadDeps = getControlDeps(),
): Promise<CandidateRecord> {
  return findCandidate(deps.db, id);
}
