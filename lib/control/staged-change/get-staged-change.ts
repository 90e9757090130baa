import type { ReadDeps } from "../deps";
import { findStagedChange, type StagedChangeRecord } from "./staged-change-record";

/** One staged change, or NOT_FOUND. */
export async function getStagedChange(id: string, deps: ReadDeps): Promise<StagedChangeRecord> {
  return findStagedChange(deps.db, id);
}
