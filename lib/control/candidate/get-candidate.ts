import type { ReadDeps } from "../deps";
import { type CandidateRecord, findCandidate } from "./candidate-record";

/** One dry-run candidate, or NOT_FOUND. */
export async function getCandidate(id: string, deps: ReadDeps): Promise<CandidateRecord> {
  return findCandidate(deps.db, id);
}
