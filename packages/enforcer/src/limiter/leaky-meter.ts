import { assertTimeAndCost, assertValidLimit } from "./arguments";
import { decisionOf, StepNumbers } from "./decision";
import { ceilMs, RETRY_CORRECTION_STEPS, timeNoiseMs, UNIT_TOLERANCE } from "./numeric";
import type { Decision, LeakyMeterLimit, Step } from "./types";

/** What a leaky meter keeps per key: one number. */
export interface LeakyMeterState {
  readonly algorithm: "leaky-meter";
  /**
   * The instant at which the meter had, virtually, no room left. Room accrues from then at
   * `drainPerSec`, capped at `burst`: `room(now) = min(burst, (now - zeroRoomAtMs) * rate)`.
   * Every write clamps it to at least `now - burst / rate`, so the stored instant never holds more
   * room than the burst in force when it was written.
   */
  readonly zeroRoomAtMs: number;
}

/** The kernel's output for the object-returning step, reused (steps never nest). */
const STEP = new StepNumbers();

/** How long `units` of cost take to drain, in (fractional) milliseconds. */
function drainMs(units: number, drainPerSec: number): number {
  return (units * 1000) / drainPerSec;
}

/**
 * The instant the meter is evaluated at: `nowMs` plus the round-off of the stored instant (see
 * `timeNoiseMs`), so that rounding never makes a full meter read short.
 */
function evaluatedAtMs(nowMs: number): number {
  return nowMs + timeNoiseMs(nowMs);
}

function roomAt(
  hasState: boolean,
  zeroRoomAtMs: number,
  limit: LeakyMeterLimit,
  atMs: number,
): number {
  if (!hasState) return limit.burst;
  const room = ((atMs - zeroRoomAtMs) * limit.drainPerSec) / 1000;
  if (room <= 0) return 0;
  return Math.min(room, limit.burst);
}

/**
 * Leaky bucket as a meter (GCRA): admits iff the request's cost fits in the room the bucket has,
 * rejects otherwise; it never delays. It admits exactly what a token bucket with
 * `capacity = burst` and `refillPerSec = drainPerSec` admits, with one number of state instead
 * of two.
 *
 * Cost: one number per key (the instant the meter had no room, see `LeakyMeterState`); constant
 * work. In any interval of `t` seconds it admits at most `burst + drainPerSec * t` units.
 *
 * How it fails: one number cannot tell a clock that went back from a bucket that is full. A
 * backwards step of `d` ms hides up to `d * drainPerSec / 1000` units of room (never more than the
 * room there was) until the clock has caught up again: it rejects early, never admits extra.
 * The stored instant is absolute, so each admission rounds it to the doubles near `nowMs` (a grid
 * of 2^-12 ms for today's epoch milliseconds): over a busy stretch the drain can drift by up to
 * 2^-13 ms per admission (parts per million of the rate), and the meter is evaluated a couple of
 * microseconds after `nowMs` so that this rounding never rejects a request that fits exactly.
 *
 * A raised `burst` adds no room (room is capped by the burst in force at the last write, until
 * time refills it); a lowered one clamps the room. A rejection writes nothing. A cost above
 * `burst` is `cost-exceeds-capacity` with `retryAfterMs` 0 and consumes nothing. `retryAfterMs` is
 * the time until the room reaches `cost`, rounded up; `resetAfterMs` until it reaches `burst`.
 *
 * Throws on a time, cost or limit outside the limiter's bounds (`arguments.ts`).
 */
export function stepLeakyMeter(
  state: LeakyMeterState | undefined,
  limit: LeakyMeterLimit,
  nowMs: number,
  cost: number,
): Step<LeakyMeterState> {
  assertTimeAndCost(nowMs, cost);
  assertValidLimit(limit);
  return stepLeakyMeterUnchecked(state, limit, nowMs, cost);
}

/** {@link stepLeakyMeter} for callers that validated the limit, time and cost already. */
export function stepLeakyMeterUnchecked(
  state: LeakyMeterState | undefined,
  limit: LeakyMeterLimit,
  nowMs: number,
  cost: number,
): Step<LeakyMeterState> {
  const out = STEP;
  if (state === undefined) stepLeakyMeterInto(false, 0, limit, nowMs, cost, out);
  else stepLeakyMeterInto(true, state.zeroRoomAtMs, limit, nowMs, cost, out);
  return {
    decision: decisionOf(out, limit.burst),
    // A rejection that changed nothing hands back the stored state itself.
    state:
      !out.allowed && state !== undefined && out.first === state.zeroRoomAtMs
        ? state
        : { algorithm: "leaky-meter", zeroRoomAtMs: out.first },
  };
}

/**
 * The leaky meter's step as numbers, for callers that validated the limit, time and cost: the
 * stored state is `hasState`, `stateZeroRoomAtMs`, and `out` receives the decision's numbers and
 * the state to store (`first` = zeroRoomAtMs). What {@link stepLeakyMeterUnchecked} runs, without
 * building objects.
 */
export function stepLeakyMeterInto(
  hasState: boolean,
  stateZeroRoomAtMs: number,
  limit: LeakyMeterLimit,
  nowMs: number,
  cost: number,
  out: StepNumbers,
): void {
  const atMs = evaluatedAtMs(nowMs);
  const room = roomAt(hasState, stateZeroRoomAtMs, limit, atMs);
  // The clamp anchors on nowMs itself, so the evaluation's slack is never written into the state.
  const fullAtMs = nowMs - drainMs(limit.burst, limit.drainPerSec);
  const zeroRoomAtMs = hasState && stateZeroRoomAtMs >= fullAtMs ? stateZeroRoomAtMs : fullAtMs;
  const resetAfterMs = ceilMs(drainMs(limit.burst - room, limit.drainPerSec));

  if (cost > limit.burst) {
    out.reject("cost-exceeds-capacity", room, 0, resetAfterMs);
    out.first = zeroRoomAtMs;
    return;
  }
  if (cost <= room + UNIT_TOLERANCE) {
    const left = room > cost ? room - cost : 0;
    out.admit(left, ceilMs(drainMs(limit.burst - left, limit.drainPerSec)));
    out.first = zeroRoomAtMs + drainMs(cost, limit.drainPerSec);
    return;
  }
  // Room grows with time up to burst >= cost; the check absorbs rounding.
  let retryAfterMs = ceilMs(zeroRoomAtMs + drainMs(cost, limit.drainPerSec) - atMs);
  for (
    let step = 0;
    roomAt(true, zeroRoomAtMs, limit, evaluatedAtMs(nowMs + retryAfterMs)) + UNIT_TOLERANCE < cost;
    step++
  ) {
    if (step === RETRY_CORRECTION_STEPS) {
      retryAfterMs = Math.max(retryAfterMs, resetAfterMs);
      break;
    }
    retryAfterMs += 1;
  }
  out.reject("limit-exceeded", room, retryAfterMs, resetAfterMs);
  out.first = zeroRoomAtMs;
}

/** The decision a request of `cost` would get now; computes, writes nothing. */
export function peekLeakyMeter(
  state: LeakyMeterState | undefined,
  limit: LeakyMeterLimit,
  nowMs: number,
  cost = 1,
): Decision {
  return stepLeakyMeter(state, limit, nowMs, cost).decision;
}
