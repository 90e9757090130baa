import type { ReportedTier, SeenCustomer } from "@limitplane/enforcer/publication";

/**
 * A customer as the gateways reported it. `reportedTier` is what gateways said, shown as
 * "reported by gateways": it is never policy until an operator registers the customer.
 */
export interface SeenCustomerRecord {
  readonly id: string;
  readonly lastSeenAt: string;
  /** The most recently reported tier name; null when gateways sent none (the default tier). */
  readonly reportedTier: string | null;
  /** Every tier reported, most recent first. */
  readonly reportedTiers: readonly { readonly tier: string | null; readonly lastSeenAt: string }[];
}

export function toSeenCustomerRecord(seen: SeenCustomer): SeenCustomerRecord {
  return {
    id: seen.id,
    lastSeenAt: new Date(seen.lastSeenAtMs).toISOString(),
    reportedTier: latestTier(seen.tiers),
    reportedTiers: seen.tiers.map((entry) => ({
      tier: entry.tier,
      lastSeenAt: new Date(entry.lastSeenAtMs).toISOString(),
    })),
  };
}

function latestTier(tiers: readonly ReportedTier[]): string | null {
  return tiers.find((entry) => entry.tier !== null)?.tier ?? null;
}
