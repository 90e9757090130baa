import {
  readSeenCustomer,
  readSeenCustomerIds,
  readSeenOverflow,
} from "@limitplane/enforcer/publication";
import { parseOptions } from "../change-context";
import type { SeenCustomerDeps } from "../deps";
import { type SeenCustomerRecord, toSeenCustomerRecord } from "./seen-customer-record";
import { type ListSeenCustomersOptions, ZListSeenCustomersOptions } from "./seen-customer-schemas";

export interface SeenCustomerPage {
  /** Customers the gateways reported that are not in the registry, most recently seen first. */
  readonly customers: readonly SeenCustomerRecord[];
  /** More matched than `limit`. */
  readonly hasMore: boolean;
  /**
   * Sightings the gateways did not report this hour and the last because their per-hour cap was
   * reached (hostile or simply many API keys), and how many gateways hit it.
   */
  readonly unreported: { readonly total: number; readonly enforcers: number };
}

const HOUR_MS = 3_600_000;

/**
 * The customers gateways reported and the registry does not hold (the registry's own search lists
 * the others), matching `search` on the start of the id. Reads at most the 10 000 ids Redis keeps
 * (one command), then the registry for the page's candidates only.
 */
export async function listSeenCustomers(
  options: ListSeenCustomersOptions,
  deps: SeenCustomerDeps,
): Promise<SeenCustomerPage> {
  const input = parseOptions(ZListSeenCustomersOptions, options);
  const hour = Math.floor(deps.clock.nowMs() / HOUR_MS);
  const [ids, thisHour, lastHour] = await Promise.all([
    readSeenCustomerIds(deps.redis, deps.prefix),
    readSeenOverflow(deps.redis, deps.prefix, hour),
    readSeenOverflow(deps.redis, deps.prefix, hour - 1),
  ]);
  const needle = input.search?.toLowerCase();
  const matching =
    needle === undefined ? ids : ids.filter((seen) => seen.id.toLowerCase().startsWith(needle));
  // Registered ones are left out; look at twice the page at a time until it is full.
  const page: SeenCustomerRecord[] = [];
  let hasMore = false;
  const batchSize = input.limit * 2;
  for (let start = 0; start < matching.length && !hasMore; start += batchSize) {
    const batch = matching.slice(start, start + batchSize);
    const registered = await deps.db.customer.findMany({
      where: { id: { in: batch.map((seen) => seen.id) } },
      select: { id: true },
    });
    const isRegistered = new Set(registered.map((row) => row.id));
    for (const seen of batch) {
      if (isRegistered.has(seen.id)) continue;
      if (page.length === input.limit) {
        hasMore = true;
        break;
      }
      page.push({
        id: seen.id,
        lastSeenAt: new Date(seen.lastSeenAtMs).toISOString(),
        reportedTier: null,
        reportedTiers: [],
      });
    }
  }
  // The page's tiers: one hash each.
  const customers = await Promise.all(
    page.map(async (entry) => {
      const seen = await readSeenCustomer(deps.redis, deps.prefix, entry.id);
      return seen === null ? entry : toSeenCustomerRecord(seen);
    }),
  );
  return {
    customers,
    hasMore,
    unreported: {
      total: thisHour.total + lastHour.total,
      enforcers: Math.max(thisHour.enforcers, lastHour.enforcers),
    },
  };
}
