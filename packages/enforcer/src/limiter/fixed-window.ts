import { assertTimeAndCost, assertValidLimit } from "./arguments";
import { decisionOf, StepNumbers } from "./decision";
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

/** The kernel's output for the object-returning step, reused (steps never nest). */
const STEP = new StepNumbers();

/**
 * The start of the window containing `nowMs` (`currentCount`: what it has admitted so far). A
 * stored window that the clock has left behind counts as empty. A stored window *after* the current one means the clock went
 * back: its count is kept and re-anchored on the current window, so a backwards step grants no
 * fresh budget and leaves the key waiting no longer than the end of the current window.
 */
function currentWindowStartMs(
  hasState: boolean,
  stateWindowStartMs: number,
  windowMs: number,
  nowMs: number,
): number {
  const windowStartMs = windowStartOf(nowMs, windowMs);
  return hasState &&
    windowsBetween(stateWindowStartMs, windowStartMs, windowMs) <= 0 &&
    stateWindowStartMs === windowStartMs
    ? stateWindowStartMs
    : windowStartMs;
}

/** The count of the window containing `nowMs` (see `currentWindowStartMs`). */
function currentCount(
  hasState: boolean,
  stateWindowStartMs: number,
  stateCount: number,
  windowMs: number,
  nowMs: number,
): number {
  return hasState &&
    windowsBetween(stateWindowStartMs, windowStartOf(nowMs, windowMs), windowMs) <= 0
    ? stateCount
    : 0;
}

function fitsAt(
  windowStartMs: number,
  count: number,
  limit: FixedWindowLimit,
  atMs: number,
  cost: number,
): boolean {
  return (
    currentCount(true, windowStartMs, count, limit.windowMs, atMs) + cost <=
    limit.limit + UNIT_TOLERANCE
  );
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
  const out = STEP;
  if (state === undefined) stepFixedWindowInto(false, 0, 0, limit, nowMs, cost, out);
  else stepFixedWindowInto(true, state.windowStartMs, state.count, limit, nowMs, cost, out);
  return {
    decision: decisionOf(out, limit.limit),
    // A rejection within the stored window hands back the stored state itself.
    state:
      !out.allowed &&
      state !== undefined &&
      out.first === state.windowStartMs &&
      out.second === state.count
        ? state
        : { algorithm: "fixed-window", windowStartMs: out.first, count: out.second },
  };
}

/**
 * The fixed window's step as numbers, for callers that validated the limit, time and cost: the
 * stored state is `hasState`, `stateWindowStartMs`, `stateCount`, and `out` receives the
 * decision's numbers and the state to store (`first` = windowStartMs, `second` = count). What
 * {@link stepFixedWindowUnchecked} runs, without building objects.
 */
export function stepFixedWindowInto(
  hasState: boolean,
  stateWindowStartMs: number,
  stateCount: number,
  limit: FixedWindowLimit,
  nowMs: number,
  cost: number,
  out: StepNumbers,
): void {
  const windowStartMs = currentWindowStartMs(hasState, stateWindowStartMs, limit.windowMs, nowMs);
  const count = currentCount(hasState, stateWindowStartMs, stateCount, limit.windowMs, nowMs);
  const windowEndMs = windowStartMs + limit.windowMs;
  const available = limit.limit - count;
  const resetAfterMs = count > 0 ? ceilMs(windowEndMs - nowMs) : 0;
  out.first = windowStartMs;
  out.second = count;

  if (cost > limit.limit) {
    out.reject("cost-exceeds-capacity", available, 0, resetAfterMs);
    return;
  }
  if (cost <= available + UNIT_TOLERANCE) {
    const counted = count + cost;
    out.admit(available - cost, counted > 0 ? ceilMs(windowEndMs - nowMs) : 0);
    out.second = counted;
    return;
  }
  // The next window starts empty and cost <= limit fits there; the check absorbs rounding.
  let retryAfterMs = ceilMs(windowEndMs - nowMs);
  for (let step = 0; !fitsAt(windowStartMs, count, limit, nowMs + retryAfterMs, cost); step++) {
    if (step === RETRY_CORRECTION_STEPS) {
      retryAfterMs = Math.max(retryAfterMs, resetAfterMs);
      break;
    }
    retryAfterMs += 1;
  }
  out.reject("limit-exceeded", available, retryAfterMs, resetAfterMs);
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
