import { type FixedWindowState, stepFixedWindowUnchecked } from "./fixed-window";
import { type LeakyMeterState, stepLeakyMeterUnchecked } from "./leaky-meter";
import { type SlidingLogState, stepSlidingLogUnchecked } from "./sliding-log";
import { type SlidingWindowState, stepSlidingWindowUnchecked } from "./sliding-window";
import { stepTokenBucketUnchecked, type TokenBucketState } from "./token-bucket";
import type { Decision, LimitSpec, Step } from "./types";

/**
 * The state of any limit that can take part in a layered decision. Each state names its
 * algorithm, so a bucket whose limit changed algorithm (a policy edit from a fixed window to a
 * token bucket) is recognised and starts afresh instead of being misread.
 */
export type LimitState =
  | FixedWindowState
  | SlidingLogState
  | SlidingWindowState
  | TokenBucketState
  | LeakyMeterState;

/**
 * One step of whichever algorithm `limit` names. A stored state of another algorithm is ignored:
 * the key starts as new (full) under the new algorithm. Checks nothing: callers validate the
 * limit once (`assertValidLimit` / `assertValidChecks`) and the time and cost per call.
 */
export function stepLimit(
  state: LimitState | undefined,
  limit: LimitSpec,
  nowMs: number,
  cost: number,
): Step<LimitState> {
  switch (limit.algorithm) {
    case "fixed-window":
      return stepFixedWindowUnchecked(
        state?.algorithm === "fixed-window" ? state : undefined,
        limit,
        nowMs,
        cost,
      );
    case "sliding-log":
      return stepSlidingLogUnchecked(
        state?.algorithm === "sliding-log" ? state : undefined,
        limit,
        nowMs,
        cost,
      );
    case "sliding-window":
      return stepSlidingWindowUnchecked(
        state?.algorithm === "sliding-window" ? state : undefined,
        limit,
        nowMs,
        cost,
      );
    case "token-bucket":
      return stepTokenBucketUnchecked(
        state?.algorithm === "token-bucket" ? state : undefined,
        limit,
        nowMs,
        cost,
      );
    case "leaky-meter":
      return stepLeakyMeterUnchecked(
        state?.algorithm === "leaky-meter" ? state : undefined,
        limit,
        nowMs,
        cost,
      );
    default: {
      const unknown: never = limit;
      throw new TypeError(`unknown limit algorithm: ${JSON.stringify(unknown)}`);
    }
  }
}

/** The decision a request of `cost` would get now under `limit`; computes, writes nothing. Checks nothing. */
export function peekLimit(
  state: LimitState | undefined,
  limit: LimitSpec,
  nowMs: number,
  cost = 1,
): Decision {
  return stepLimit(state, limit, nowMs, cost).decision;
}
