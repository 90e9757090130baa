/**
 * The reconciler's step for a global budget (docs/regions.md, "Global budgets"): divides one
 * limit among regions by recent demand, as shares of its capacity and refill that never sum above
 * 1. Pure: the caller reads each region's demand and whether it could reach it, and writes the
 * result, decreases before increases.
 *
 * Invariants, each locked in by allot-global-budget.test.ts:
 *
 * - The shares in force never sum above 1. A region the reconciler cannot reach keeps what it
 *   holds (frozen) until its lease has expired by `leaseMs` plus `skewMs`; by then its own
 *   enforcers have fallen back to `floorShare`, and only then is the rest of its share given away.
 * - A reachable region gets at least `floorShare`; the rest is split in proportion to demand.
 * - Decreases are listed apart from increases: written first, so no instant has a region still
 *   on its old, larger share while another already has the share it gave up.
 */

export interface RegionBudgetState {
  readonly region: string;
  /** The share of the limit the region holds now (what its Redis says), in [0, 1]. */
  readonly share: number;
  /** When its lease on `share` ends, by the reconciler's clock (epoch ms). */
  readonly leaseExpiresAtMs: number;
  /** Whether the reconciler read its consumption and can write to it this round. */
  readonly isReachable: boolean;
  /** Units per second it admitted plus rejected over the last interval (its demand). */
  readonly demandPerSec: number;
}

export interface AllotOptions {
  /** The reconciler's clock, epoch ms. */
  readonly nowMs: number;
  /** How long a written share stays in force without renewal. */
  readonly leaseMs: number;
  /** Most the clocks of the reconciler and a region's Redis may disagree by. */
  readonly skewMs: number;
  /** The share a region falls back to when its lease ends, and the least a reachable one gets. */
  readonly floorShare: number;
}

export interface RegionAllotment {
  readonly region: string;
  readonly share: number;
  readonly leaseExpiresAtMs: number;
  /** `frozen`: unreachable, lease running; `floor`: unreachable, lease over; `allotted`: new. */
  readonly status: "allotted" | "frozen" | "floor";
}

export interface Allotment {
  readonly regions: readonly RegionAllotment[];
  /** Regions whose share goes down: write these first. */
  readonly decreases: readonly string[];
  /** Regions whose share goes up: write these once every decrease is written. */
  readonly increases: readonly string[];
}

/** Guards the option ranges a configuration mistake could produce. */
function checkOptions(regions: readonly RegionBudgetState[], options: AllotOptions): void {
  if (!(options.leaseMs > 0 && options.skewMs >= 0)) {
    throw new RangeError("leaseMs must be above 0 and skewMs at least 0");
  }
  if (!(options.floorShare >= 0 && options.floorShare * regions.length <= 1)) {
    throw new RangeError("floorShare must be at least 0, and at most 1 / regions");
  }
}

export function allotGlobalBudget(
  regions: readonly RegionBudgetState[],
  options: AllotOptions,
): Allotment {
  checkOptions(regions, options);
  const { nowMs, leaseMs, skewMs, floorShare } = options;
  const held = new Map<string, RegionAllotment>();
  let available = 1;
  for (const region of regions) {
    if (region.isReachable) continue;
    // Its enforcers stop using the share at leaseExpiresAtMs by its Redis's clock, which may run
    // up to skewMs behind ours.
    const isLeaseRunning = nowMs < region.leaseExpiresAtMs + skewMs;
    const share = isLeaseRunning ? region.share : Math.min(region.share, floorShare);
    held.set(region.region, {
      region: region.region,
      share,
      leaseExpiresAtMs: region.leaseExpiresAtMs,
      status: isLeaseRunning ? "frozen" : "floor",
    });
    available -= share;
  }
  const reachable = regions.filter((region) => region.isReachable);
  const spread = Math.max(0, available - floorShare * reachable.length);
  const totalDemand = reachable.reduce((sum, region) => sum + Math.max(0, region.demandPerSec), 0);
  for (const region of reachable) {
    const weight =
      totalDemand > 0 ? Math.max(0, region.demandPerSec) / totalDemand : 1 / reachable.length;
    held.set(region.region, {
      region: region.region,
      // Rounded down to 1e-9 so rounding never lifts the sum above 1.
      share: Math.floor((floorShare + spread * weight) * 1e9) / 1e9,
      leaseExpiresAtMs: nowMs + leaseMs,
      status: "allotted",
    });
  }
  const allotments = regions.map((region) => {
    const found = held.get(region.region);
    if (found === undefined) throw new Error(`region ${region.region} was not allotted`);
    return found;
  });
  const before = new Map(regions.map((region) => [region.region, region.share]));
  return {
    regions: allotments,
    decreases: allotments
      .filter(
        (entry) => entry.status === "allotted" && entry.share < (before.get(entry.region) ?? 0),
      )
      .map((entry) => entry.region),
    increases: allotments
      .filter(
        (entry) => entry.status === "allotted" && entry.share > (before.get(entry.region) ?? 0),
      )
      .map((entry) => entry.region),
  };
}
