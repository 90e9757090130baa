import type { ReadDeps } from "../deps";
import { type TierRecord, tierSelect, toTierRecord } from "./tier-record";

/** Every tier, by name. */
export async function listTiers(deps: ReadDeps): Promise<TierRecord[]> {
  const rows = await deps.db.tier.findMany({ orderBy: { name: "asc" }, select: tierSelect });
  return rows.map(toTierRecord);
}
