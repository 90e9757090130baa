/**
 * The decisions both Redis suites (`redis`, `redis-instructions`) ask of each side: one limit, and
 * three layers in one call, as our checks and as rate-limiter-flexible's limiters for the same
 * limits (three layers as its union of one limiter per check).
 */
import type { LimitCheck } from "@limitplane/enforcer/limiter";
import type { Redis } from "ioredis";
import { RateLimiterRedis, RateLimiterUnion } from "rate-limiter-flexible";

/** One limit: a token bucket of 100, refilled at 50/s; the workload gives a subject ~10/s. */
export const ONE_LIMIT: readonly LimitCheck[] = [
  {
    scope: "tier:pro",
    bucket: "account",
    limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 50 },
    mode: "enforce",
  },
];

/** Three layers, one call: a global ceiling, the account's bucket, an endpoint class. */
export const THREE_LAYERS: readonly LimitCheck[] = [
  {
    scope: "ceiling",
    bucket: "ceiling",
    limit: { algorithm: "fixed-window", limit: 10_000, windowMs: 60_000 },
    mode: "enforce",
  },
  ...ONE_LIMIT,
  {
    scope: "tier:pro/endpoint:search",
    bucket: "endpoint:search",
    limit: { algorithm: "sliding-window", limit: 6_000, windowMs: 60_000 },
    mode: "enforce",
  },
];

export type Shape = "one" | "three";

/**
 * rate-limiter-flexible's side on `client`, under `prefix`: its account limiter (one limit: its
 * counter, 100 points a second) and the union of ceiling, account and endpoint (three layers).
 */
export function rlfLimiters(
  client: Redis,
  prefix: string,
): { readonly account: RateLimiterRedis; readonly union: RateLimiterUnion } {
  const account = new RateLimiterRedis({
    storeClient: client,
    keyPrefix: `${prefix}:account`,
    points: 100,
    duration: 1,
  });
  const union = new RateLimiterUnion(
    new RateLimiterRedis({
      storeClient: client,
      keyPrefix: `${prefix}:ceiling`,
      points: 10_000,
      duration: 60,
    }),
    account,
    new RateLimiterRedis({
      storeClient: client,
      keyPrefix: `${prefix}:search`,
      points: 6_000,
      duration: 60,
    }),
  );
  return { account, union };
}
