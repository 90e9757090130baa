/**
 * Where a region's Redis holds its shares of the global limits and their demand (docs/regions.md,
 * "Global budgets"). The reconciler (the control plane's worker) writes the shares and reads the
 * demand; the region's enforcers read the shares and add to the demand, once per poll. Every key
 * shares the hash tag `{global}`, so one poll is one pipeline to one Cluster slot.
 *
 * | name | type | content |
 * | --- | --- | --- |
 * | `{global}:share:<scope>` | string | `{"share","leaseExpiresAtMs","floorShare"}` (JSON; `leaseExpiresAtMs` by the reconciler's clock, which may differ from the Redis's by the allowed skew) |
 * | `{global}:demand:<scope>` | string | units of cost of every request that reached the limit in this region, admitted or rejected, ever (a counter: the reconciler reads its growth) |
 */
import { z } from "zod";

export interface GlobalBudgetRedisNames {
  /** The region's share of the global limit at `scope`. */
  share(scope: string): string;
  /** The region's demand counter of the global limit at `scope`. */
  demand(scope: string): string;
}

export function globalBudgetRedisNames(prefix: string): GlobalBudgetRedisNames {
  return {
    share: (scope) => `${prefix}{global}:share:${scope}`,
    demand: (scope) => `${prefix}{global}:demand:${scope}`,
  };
}

const ZShareValue = z.strictObject({
  share: z.number().min(0).max(1),
  leaseExpiresAtMs: z.number().finite(),
  floorShare: z.number().min(0).max(1),
});

/** A share as the key holds it. */
export type TGlobalShareValue = z.output<typeof ZShareValue>;

/** The key's text for `value`. */
export function formatGlobalShare(value: TGlobalShareValue): string {
  return JSON.stringify({
    share: value.share,
    leaseExpiresAtMs: value.leaseExpiresAtMs,
    floorShare: value.floorShare,
  });
}

/** The share a key holds; null for no key or a value that is not one (then the floor applies). */
export function parseGlobalShare(text: string | null): TGlobalShareValue | null {
  if (text === null) return null;
  try {
    const parsed = ZShareValue.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
