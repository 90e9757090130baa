import { assertTimeAndCost, assertValidLimit } from "./arguments";
import { admit, reject } from "./decision";
import {
  ceilMs,
  RETRY_CORRECTION_STEPS,
  UNIT_TOLERANCE,
  windowStartOf,
  windowsBetween,
} from "./numeric";
import type { Decision, FixedWindowLimit, Step } from "./types";

/** What a fixed window keeps per key: two numbers. */
export interface FixedWindowState {
  readonly algorithm: "fixed-window";
  /** Start of the window the count belongs to: a multiple of `windowMs` on the caller's clock. */
  readonly windowStartMs: number;
  /** Units of cost admitted in that window. */
  readonly count: number;
}

/**
 * The window containing `nowMs` and what it has admitted so far. A stored window that the clock
 * has left behind counts as empty. A stored window *after* the current one means the clock went
 * back: its count is kept and re-anchored on the current window, so a backwards step grants no
 * fresh budget and leaves the key waiting no longer than the end of the current window.
 */
function currentWindow(
  state: FixedWindowState | undefined,
  windowMs: number,
  nowMs: number,
): FixedWindowState {
  const windowStartMs = windowStartOf(nowMs, windowMs);
  if (state !== undefined && windowsBetween(state.windowStartMs, windowStartMs, windowMs) <= 0) {
    return state.windowStartMs === windowStartMs
      ? state
      : { algorithm: "fixed-window", windowStartMs, count: state.count };
  }
  return { algorithm: "fixed-window", windowStartMs, count: 0 };
}

function fitsAt(
  state: FixedWindowState,
  limit: FixedWindowLimit,
  atMs: number,
  cost: number,
): boolean {
  return currentWindow(state, limit.windowMs, atMs).count + cost <= limit.limit + UNIT_TOLERANCE;
}

/**
 * Fixed window: at most `limit` units of cost per window cut from the clock
 * (`windowStartMs = nowMs - nowMs % windowMs`), so every key's windows line up.
 *
 * Cost: two numbers per key; constant work, no allocation beyond the returned objects.
 *
 * How it fails: it is blind to what happened just before the window started. 100 requests at
 * 10:04:59 and 100 at 10:05:01 are all admitted under "100 per minute": 200 in two seconds, up to
 * twice the limit in any span of `windowMs` (never more than `limit` within one aligned window).
 * Use it for rough internal caps, not for a limit a customer reads.
 *
 * A rejection does not increment (over the limit is not a penalty). A cost above `limit` is
 * rejected as `cost-exceeds-capacity` with `retryAfterMs` 0 and consumes nothing. A rejected
 * request is told to come back when the next window starts. Changing `windowMs` keeps the count
 * only while the stored window start is still the current one under the new length.
 *
 * Throws on a time, cost or limit outside the limiter's bounds (`arguments.ts`).
 */
export function stepFixedWindow(
  state: FixedWindowState | undefined,
  limit: FixedWindowLimit,
  nowMs: number,
  cost: number,
): Step<FixedWindowState> {
  assertTimeAndCost(nowMs, cost);
  assertValidLimit(limit);
  return stepFixedWindowUnchecked(state, limit, nowMs, cost);
}

/** {@link stepFixedWindow} for callers that validated the limit, time and cost already. */
export function stepFixedWindowUnchecked(
  state: FixedWindowState | undefined,
  limit: FixedWindowLimit,
  nowMs: number,
  cost: number,
): Step<FixedWindowState> {
  const current = currentWindow(state, limit.windowMs, nowMs);
  const windowEndMs = current.windowStartMs + limit.windowMs;
  const available = limit.limit - current.count;
  const resetAfterMs = current.count > 0 ? ceilMs(windowEndMs - nowMs) : 0;

  if (cost > limit.limit) {
    return {
      decision: reject("cost-exceeds-capacity", limit.limit, available, 0, resetAfterMs),
      state: current,
    };
  }
  if (cost <= available + UNIT_TOLERANCE) {
    const count = current.count + cost;
    return {
      decision: admit(limit.limit, available - cost, count > 0 ? ceilMs(windowEndMs - nowMs) : 0),
      state: { algorithm: "fixed-window", windowStartMs: current.windowStartMs, count },
    };
  }
  // The next window starts empty and cost <= limit fits there; the check absorbs rounding.
  let retryAfterMs = ceilMs(windowEndMs - nowMs);
  for (let step = 0; !fitsAt(current, limit, nowMs + retryAfterMs, cost); step++) {
    if (step === RETRY_CORRECTION_STEPS) {
      retryAfterMs = Math.max(retryAfterMs, resetAfterMs);
      break;
    }
    retryAfterMs += 1;
  }
  return {
    decision: reject("limit-exceeded", limit.limit, available, retryAfterMs, resetAfterMs),
    state: current,
  };
}

/** The decision a request of `cost` would get now; computes, writes nothing. */
export function peekFixedWindow(
  state: FixedWindowState | undefined,
  limit: FixedWindowLimit,
  nowMs: number,
  cost = 1,
): Decision {
  return stepFixedWindow(state, limit, nowMs, cost).decision;
}
