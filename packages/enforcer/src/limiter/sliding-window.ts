import { assertTimeAndCost, assertValidLimit } from "./arguments";
import { decisionOf, StepNumbers } from "./decision";
import {
  ceilMs,
  RETRY_CORRECTION_STEPS,
  UNIT_TOLERANCE,
  windowStartOf,
  windowsBetween,
} from "./numeric";
import type { Decision, SlidingWindowLimit, Step } from "./types";

/** What a sliding window counter keeps per key: three numbers. */
export interface SlidingWindowState {
  readonly algorithm: "sliding-window";
  /** Start of the current window: a multiple of `windowMs` on the caller's clock. */
  readonly windowStartMs: number;
  /** Units of cost admitted in the current window. */
  readonly currentCount: number;
  /** Units of cost admitted in the window immediately before it. */
  readonly previousCount: number;
}

/** The three counters, as the helpers below read them. */
interface WindowCounts {
  readonly windowStartMs: number;
  readonly currentCount: number;
  readonly previousCount: number;
}

/** Counters the kernel works in, reused (steps never nest): no object per step. */
class Windows implements WindowCounts {
  windowStartMs = 0;
  currentCount = 0;
  previousCount = 0;
}

/** The kernel's output for the object-returning step, and its working counters. */
const STEP = new StepNumbers();
const CURRENT = new Windows();
const NEXT = new Windows();
const AT = new Windows();

/**
 * The counters as of `nowMs`, written into `into`. The window just left becomes the previous one only if it really
 * was the immediately preceding window; an older one counts as zero. A stored window after the
 * current one means the clock went back: its counts are kept and re-anchored on the current
 * window, so a backwards step grants no fresh budget.
 */
function currentWindowsInto(
  hasState: boolean,
  stateWindowStartMs: number,
  stateCurrentCount: number,
  statePreviousCount: number,
  windowMs: number,
  nowMs: number,
  into: Windows,
): void {
  const windowStartMs = windowStartOf(nowMs, windowMs);
  if (hasState) {
    const windowsLater = windowsBetween(stateWindowStartMs, windowStartMs, windowMs);
    if (windowsLater <= 0) {
      into.windowStartMs =
        stateWindowStartMs === windowStartMs ? stateWindowStartMs : windowStartMs;
      into.currentCount = stateCurrentCount;
      into.previousCount = statePreviousCount;
      return;
    }
    if (windowsLater === 1) {
      into.windowStartMs = windowStartMs;
      into.currentCount = 0;
      into.previousCount = stateCurrentCount;
      return;
    }
  }
  into.windowStartMs = windowStartMs;
  into.currentCount = 0;
  into.previousCount = 0;
}

/** `curr + prev * (1 - elapsed fraction of the current window)`. */
function estimateAt(windows: WindowCounts, windowMs: number, nowMs: number): number {
  const elapsedFraction = (nowMs - windows.windowStartMs) / windowMs;
  return windows.currentCount + windows.previousCount * (1 - elapsedFraction);
}

function fitsAt(
  windows: WindowCounts,
  limit: SlidingWindowLimit,
  atMs: number,
  cost: number,
): boolean {
  const at = AT;
  currentWindowsInto(
    true,
    windows.windowStartMs,
    windows.currentCount,
    windows.previousCount,
    limit.windowMs,
    atMs,
    at,
  );
  return estimateAt(at, limit.windowMs, atMs) + cost <= limit.limit + UNIT_TOLERANCE;
}

/**
 * The exact instant the estimate leaves room for `cost`, given that nothing else is admitted.
 * Within the current window the previous window's weight falls linearly; if the current count
 * alone leaves no room, the earliest chance is in the next window, where the current count
 * becomes the previous one and decays in turn (so a wait can reach up to two window ends away).
 */
function roomAtMs(windows: WindowCounts, limit: SlidingWindowLimit, cost: number): number {
  const windowMs = limit.windowMs;
  const roomInCurrent = limit.limit - cost - windows.currentCount;
  if (roomInCurrent >= 0) {
    return windows.windowStartMs + windowMs * (1 - roomInCurrent / windows.previousCount);
  }
  const nextStartMs = windows.windowStartMs + windowMs;
  return nextStartMs + windowMs * (1 - (limit.limit - cost) / windows.currentCount);
}

function resetAfterMs(windows: WindowCounts, windowMs: number, nowMs: number): number {
  if (windows.currentCount > 0) return ceilMs(windows.windowStartMs + 2 * windowMs - nowMs);
  if (windows.previousCount > 0) return ceilMs(windows.windowStartMs + windowMs - nowMs);
  return 0;
}

/**
 * Sliding window counter: estimates the rolling count as `curr + prev * (1 - elapsed)`, where
 * `elapsed` is the fraction of the current window gone by, and admits iff
 * `estimate + cost <= limit`. That is the rule "the request fits under the limit", so the estimate
 * never exceeds `limit` (a rule of `estimate < limit` would let a cost-1 request at estimate
 * 99.5 take it to 100.5). Worked: limit 100, the previous minute ended with 90, 15 s into this
 * minute with 20 admitted: estimate = 20 + 90 * 0.75 = 87.5, and a request is admitted.
 *
 * Cost: three numbers per key; constant work.
 *
 * How it fails: the estimate assumes the previous window's cost was spread evenly across it. If
 * all 90 of those requests arrived in its final second, the true count of the last minute at
 * 10:05:15 is 110 while the estimate says 87.5 and admits: bursts crammed against the end of a
 * window are under-counted, in the permissive direction. Bounds: never more than `limit` within
 * one aligned window (the current count alone must fit); up to twice `limit` in a rolling window
 * in the worst case. A previous window that was not the immediately preceding one counts as zero.
 *
 * A rejection does not increment; `retryAfterMs` is the exact wait (rounded up to a whole
 * millisecond) until the estimate leaves room, possibly in the next window. A cost above `limit`
 * is `cost-exceeds-capacity` with `retryAfterMs` 0 and consumes nothing.
 *
 * Throws on a time, cost or limit outside the limiter's bounds (`arguments.ts`).
 */
export function stepSlidingWindow(
  state: SlidingWindowState | undefined,
  limit: SlidingWindowLimit,
  nowMs: number,
  cost: number,
): Step<SlidingWindowState> {
  assertTimeAndCost(nowMs, cost);
  assertValidLimit(limit);
  return stepSlidingWindowUnchecked(state, limit, nowMs, cost);
}

/** {@link stepSlidingWindow} for callers that validated the limit, time and cost already. */
export function stepSlidingWindowUnchecked(
  state: SlidingWindowState | undefined,
  limit: SlidingWindowLimit,
  nowMs: number,
  cost: number,
): Step<SlidingWindowState> {
  const out = STEP;
  if (state === undefined) stepSlidingWindowInto(false, 0, 0, 0, limit, nowMs, cost, out);
  else {
    stepSlidingWindowInto(
      true,
      state.windowStartMs,
      state.currentCount,
      state.previousCount,
      limit,
      nowMs,
      cost,
      out,
    );
  }
  return {
    decision: decisionOf(out, limit.limit),
    // A rejection within the stored window hands back the stored state itself.
    state:
      !out.allowed &&
      state !== undefined &&
      out.first === state.windowStartMs &&
      out.second === state.currentCount &&
      out.third === state.previousCount
        ? state
        : {
            algorithm: "sliding-window",
            windowStartMs: out.first,
            currentCount: out.second,
            previousCount: out.third,
          },
  };
}

/**
 * The sliding window counter's step as numbers, for callers that validated the limit, time and
 * cost: the stored state is `hasState` and its three counters, and `out` receives the decision's
 * numbers and the state to store (`first` = windowStartMs, `second` = currentCount, `third` =
 * previousCount). What {@link stepSlidingWindowUnchecked} runs, without building objects.
 */
export function stepSlidingWindowInto(
  hasState: boolean,
  stateWindowStartMs: number,
  stateCurrentCount: number,
  statePreviousCount: number,
  limit: SlidingWindowLimit,
  nowMs: number,
  cost: number,
  out: StepNumbers,
): void {
  const windows = CURRENT;
  currentWindowsInto(
    hasState,
    stateWindowStartMs,
    stateCurrentCount,
    statePreviousCount,
    limit.windowMs,
    nowMs,
    windows,
  );
  const available = limit.limit - estimateAt(windows, limit.windowMs, nowMs);
  out.first = windows.windowStartMs;
  out.second = windows.currentCount;
  out.third = windows.previousCount;

  if (cost > limit.limit) {
    out.reject("cost-exceeds-capacity", available, 0, resetAfterMs(windows, limit.windowMs, nowMs));
    return;
  }
  if (cost <= available + UNIT_TOLERANCE) {
    const next = NEXT;
    next.windowStartMs = windows.windowStartMs;
    next.currentCount = windows.currentCount + cost;
    next.previousCount = windows.previousCount;
    out.admit(available - cost, resetAfterMs(next, limit.windowMs, nowMs));
    out.second = next.currentCount;
    return;
  }
  // Two windows on, both counters have decayed to zero and cost <= limit fits; the check
  // absorbs rounding.
  const resetMs = resetAfterMs(windows, limit.windowMs, nowMs);
  let retryAfterMs = ceilMs(roomAtMs(windows, limit, cost) - nowMs);
  for (let step = 0; !fitsAt(windows, limit, nowMs + retryAfterMs, cost); step++) {
    if (step === RETRY_CORRECTION_STEPS) {
      retryAfterMs = Math.max(retryAfterMs, resetMs);
      break;
    }
    retryAfterMs += 1;
  }
  out.reject("limit-exceeded", available, retryAfterMs, resetMs);
}

/** The decision a request of `cost` would get now; computes, writes nothing. */
export function peekSlidingWindow(
  state: SlidingWindowState | undefined,
  limit: SlidingWindowLimit,
  nowMs: number,
  cost = 1,
): Decision {
  return stepSlidingWindow(state, limit, nowMs, cost).decision;
}
