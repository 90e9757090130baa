import { getControlDeps, type ReadDeps } from "../control-deps";
import { findTier, type TierRecord } from "./tier-record";

/** One tier, or NOT_FOUND. */
export async function getTier(
  name: string,
  deps: ReadDeps = getControlDeps(),
): Promise<TierRecord> {
  return findTier(deps.db, name);
}
