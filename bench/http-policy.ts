/**
 * The policy the HTTP bench runs, shared by the enforcer targets (published to Redis) and
 * rate-limiter-flexible's (the same limits as its limiters): a `wide` tier no workload here can
 * reach, a `tight` tier of ten requests per day, and a per-customer ceiling as wide as `wide`.
 */
import type { TSnapshot } from "@limitplane/enforcer/policy";
import { exampleSnapshot, tokenBucket } from "@limitplane/enforcer/testing";

export const BENCH_LIMITS = {
  /** `wide`: bursts of this many, refilled at this many per second. */
  widePerSec: 1_000_000,
  /**
   * `tight`: this many per day (the least the example policy allows: its reports class costs 10).
   * The bench spends them before it measures.
   */
  tightPerDay: 10,
} as const;

export function benchSnapshot(version = 1): TSnapshot {
  return exampleSnapshot(
    (policy) => {
      policy.tiers.push(
        {
          name: "wide",
          displayName: "Wide (bench)",
          limit: tokenBucket(BENCH_LIMITS.widePerSec, BENCH_LIMITS.widePerSec),
        },
        {
          name: "tight",
          displayName: "Tight (bench)",
          limit: tokenBucket(BENCH_LIMITS.tightPerDay, BENCH_LIMITS.tightPerDay / 86_400),
        },
      );
      policy.ceilings.perCustomer = tokenBucket(BENCH_LIMITS.widePerSec, BENCH_LIMITS.widePerSec);
    },
    { version },
  );
}
