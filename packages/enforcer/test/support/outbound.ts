import type { TOutboundBudgetInput } from "../../src/policy/schemas";

/** The polite crawler's budget: 10 requests a second per host, never two at once (burst 1). */
export const CRAWL_BUDGET: TOutboundBudgetInput = {
  name: "crawl",
  limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 10 },
  maxWaitMs: 60_000,
  keyBy: "host",
};

/** Most admissions any window of `windowMs` may hold under a token bucket: capacity + rate × window. */
export function bucketBound(capacity: number, refillPerSec: number, windowMs: number): number {
  return capacity + (refillPerSec * windowMs) / 1000;
}

/** The most instants of `sorted` (ascending) that fall in any window [t, t + windowMs). */
export function busiestWindow(sorted: readonly number[], windowMs: number): number {
  let most = 0;
  let end = 0;
  for (let start = 0; start < sorted.length; start++) {
    const from = sorted[start] ?? 0;
    while (end < sorted.length && (sorted[end] ?? 0) < from + windowMs) end++;
    most = Math.max(most, end - start);
  }
  return most;
}

/** The gateways' cap: 5 requests in flight per customer, slots lapsing 1.5 s after a holder dies. */
export const GATEWAY_BUDGET: TOutboundBudgetInput = {
  name: "api",
  limit: null,
  concurrency: { max: 5, slotTtlMs: 1_500 },
  maxWaitMs: 0,
  keyBy: "account",
};
