import type { StepNumbers } from "./decision";
import {
  type FixedWindowState,
  stepFixedWindowInto,
  stepFixedWindowUnchecked,
} from "./fixed-window";
import { type LeakyMeterState, stepLeakyMeterInto, stepLeakyMeterUnchecked } from "./leaky-meter";
import type { SlidingLogState } from "./sliding-log";
import { stepSlidingLogUnchecked } from "./sliding-log";
import {
  type SlidingWindowState,
  stepSlidingWindowInto,
  stepSlidingWindowUnchecked,
} from "./sliding-window";
import {
  stepTokenBucketInto,
  stepTokenBucketUnchecked,
  type TokenBucketState,
} from "./token-bucket";
import type {
  Decision,
  FixedWindowLimit,
  LeakyMeterLimit,
  LimitSpec,
  SlidingWindowLimit,
  Step,
  TokenBucketLimit,
} from "./types";

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

/**
 * Each algorithm as a small number, for stores that keep state in typed arrays. 0 is never an
 * algorithm (a slot holding nothing). The four whose state is at most three numbers have a kernel
 * ({@link stepNumbersInto}); a sliding log keeps a list and goes through {@link stepLimit}.
 */
export const FIXED_WINDOW = 1;
export const SLIDING_LOG = 2;
export const SLIDING_WINDOW = 3;
export const TOKEN_BUCKET = 4;
export const LEAKY_METER = 5;

/** The code of `limit`'s algorithm. */
export function algorithmCodeOf(limit: LimitSpec): number {
  switch (limit.algorithm) {
    case "fixed-window":
      return FIXED_WINDOW;
    case "sliding-log":
      return SLIDING_LOG;
    case "sliding-window":
      return SLIDING_WINDOW;
    case "token-bucket":
      return TOKEN_BUCKET;
    case "leaky-meter":
      return LEAKY_METER;
    default: {
      const unknown: never = limit;
      throw new TypeError(`unknown limit algorithm: ${JSON.stringify(unknown)}`);
    }
  }
}

/** The size a decision under `limit` reports as its `limit`: `limit`, `capacity` or `burst`. */
export function limitSizeOf(limit: LimitSpec): number {
  switch (limit.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return limit.limit;
    case "token-bucket":
      return limit.capacity;
    case "leaky-meter":
      return limit.burst;
    default: {
      const unknown: never = limit;
      throw new TypeError(`unknown limit algorithm: ${JSON.stringify(unknown)}`);
    }
  }
}

/**
 * {@link stepLimit} as numbers, for the algorithms with a kernel (`code` is `limit`'s, never
 * SLIDING_LOG): the stored state is `hasState` and up to three numbers in the algorithm's own
 * order, and `out` receives the decision's numbers and the state to store in the same order. A
 * stored state of another algorithm must be passed as `hasState` false, exactly as `stepLimit`
 * ignores it. Checks nothing.
 */
export function stepNumbersInto(
  code: number,
  hasState: boolean,
  first: number,
  second: number,
  third: number,
  limit: LimitSpec,
  nowMs: number,
  cost: number,
  out: StepNumbers,
): void {
  switch (code) {
    case TOKEN_BUCKET:
      stepTokenBucketInto(hasState, first, second, limit as TokenBucketLimit, nowMs, cost, out);
      return;
    case LEAKY_METER:
      stepLeakyMeterInto(hasState, first, limit as LeakyMeterLimit, nowMs, cost, out);
      return;
    case FIXED_WINDOW:
      stepFixedWindowInto(hasState, first, second, limit as FixedWindowLimit, nowMs, cost, out);
      return;
    case SLIDING_WINDOW:
      stepSlidingWindowInto(
        hasState,
        first,
        second,
        third,
        limit as SlidingWindowLimit,
        nowMs,
        cost,
        out,
      );
      return;
    default:
      throw new RangeError(`no kernel for algorithm code ${code}`);
  }
}
