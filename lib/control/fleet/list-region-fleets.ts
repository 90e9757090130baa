/**
 * The fleet of every region (REGIONS): each region's heartbeats read from that region's Redis by
 * `listEnforcers`, in parallel. A region whose Redis does not answer is reported as such; it never
 * hides the others.
 */
import type { FleetDeps } from "../deps";
import { type Fleet, type ListEnforcersOptions, listEnforcers } from "./list-enforcers";

export interface RegionFleet {
  /** The region's name; "" for a one-Redis installation. */
  readonly region: string;
  /** Null when the region's Redis could not be read. */
  readonly fleet: Fleet | null;
  /** Why it could not be read; null when it was. */
  readonly error: string | null;
}

export async function listRegionFleets(
  regions: readonly { readonly region: string; readonly deps: FleetDeps }[],
  options: ListEnforcersOptions = {},
): Promise<RegionFleet[]> {
  const settled = await Promise.allSettled(
    regions.map((entry) => listEnforcers(entry.deps, options)),
  );
  return settled.map((result, index) => {
    const region = regions[index]?.region ?? "";
    return result.status === "fulfilled"
      ? { region, fleet: result.value, error: null }
      : {
          region,
          fleet: null,
          error: result.reason instanceof Error ? result.reason.message : String(result.reason),
        };
  });
}
