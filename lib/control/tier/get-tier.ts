import type { ReadDeps } from "../deps";
import { findTier, type TierRecord } from "./tier-record";

/** One tier, or NOT_FOUND. */
export async function getTier(name: string, deps: ReadDeps): Promise<TierRecord> {
  return findTier(deps.db, name);
}
