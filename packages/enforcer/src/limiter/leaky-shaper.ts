import { assertTimeAndCost, assertValidLimit } from "./arguments";
import { admit, reject } from "./decision";
import { ceilMs, RETRY_CORRECTION_STEPS, timeNoiseMs, UNIT_TOLERANCE } from "./numeric";
import type { Decision, LeakyShaperLimit } from "./types";

/** What a leaky shaper keeps per key: one number. */
export interface LeakyShaperState {
  readonly algorithm: "leaky-shaper";
  /** The instant everything admitted so far has drained; in the past when the queue is empty. */
  readonly drainedAtMs: number;
}

/**
 * A shaper's answer: a decision plus how long the caller must wait before doing the work, so
 * that work leaves at `drainPerSec`. `delayMs` is 0 on rejection.
 */
export interface ShapedDecision extends Decision {
  readonly delayMs: number;
}

export interface ShapedStep {
  readonly decision: ShapedDecision;
  readonly state: LeakyShaperState;
}

function drainMs(units: number, drainPerSec: number): number {
  return (units * 1000) / drainPerSec;
}

/**
 * The instant the shaper is evaluated at: `nowMs` plus the round-off of the stored instant (see
 * `timeNoiseMs`), so that rounding never makes the queue read longer than it is.
 */
function evaluatedAtMs(nowMs: number): number {
  return nowMs + timeNoiseMs(nowMs);
}

/** Units of cost admitted and not yet drained at `atMs`. */
function queuedAt(state: LeakyShaperState | undefined, drainPerSec: number, atMs: number): number {
  if (state === undefined || state.drainedAtMs <= atMs) return 0;
  return ((state.drainedAtMs - atMs) * drainPerSec) / 1000;
}

function shaped(decision: Decision, delayMs: number): ShapedDecision {
  return { ...decision, delayMs };
}

/**
 * Leaky bucket as a shaper (a queue): every admitted request is given a `delayMs` to wait, so
 * that work leaves at `drainPerSec` however lumpy the arrivals; it rejects only when the queue is
 * full. A request is released once everything admitted before it has drained, and its own cost
 * then drains at `drainPerSec`. `maxQueue` bounds the undrained cost including the request
 * itself, so `maxQueue` equal to the cost of one request means pure spacing with no waiting (like
 * nginx `limit_req` without `burst`), and each further unit lets one more unit wait.
 *
 * Cost: one number per key; constant work.
 *
 * How it fails: requests wait instead of failing fast, up to `maxQueue / drainPerSec` seconds,
 * and the caller must honour `delayMs`, since the shaper cannot hold the request itself. Use it
 * to protect a downstream that cannot take a spike, never to limit an API (real users burst).
 * A backwards clock step of `d` ms looks like `d` ms more queue until the clock catches up:
 * longer delays or early `queue-full`, never extra throughput. The stored instant is absolute and
 * rounds like the leaky meter's (see there). Not for layered decisions.
 *
 * A full queue is `queue-full` with `retryAfterMs` the time until enough has drained for `cost`
 * to fit (rounded up); it writes nothing. A cost above `maxQueue` is `cost-exceeds-capacity`
 * with `retryAfterMs` 0. `remaining` is the queue room left; `resetAfterMs` the time until the
 * queue is empty. `delayMs` is rounded up to whole milliseconds, which can only space work out
 * further.
 *
 * Throws on a time, cost or limit outside the limiter's bounds (`arguments.ts`).
 */
export function stepLeakyShaper(
  state: LeakyShaperState | undefined,
  limit: LeakyShaperLimit,
  nowMs: number,
  cost: number,
): ShapedStep {
  assertTimeAndCost(nowMs, cost);
  assertValidLimit(limit);

  const atMs = evaluatedAtMs(nowMs);
  const queued = queuedAt(state, limit.drainPerSec, atMs);
  const current: LeakyShaperState = state ?? { algorithm: "leaky-shaper", drainedAtMs: nowMs };
  const room = limit.maxQueue - queued;
  const resetAfterMs = ceilMs(current.drainedAtMs - atMs);

  if (cost > limit.maxQueue) {
    return {
      decision: shaped(reject("cost-exceeds-capacity", limit.maxQueue, room, 0, resetAfterMs), 0),
      state: current,
    };
  }
  if (cost <= room + UNIT_TOLERANCE) {
    const releaseAtMs = current.drainedAtMs > atMs ? current.drainedAtMs : nowMs;
    const drainedAtMs = releaseAtMs + drainMs(cost, limit.drainPerSec);
    return {
      decision: shaped(
        admit(limit.maxQueue, room - cost, ceilMs(drainedAtMs - nowMs)),
        ceilMs(releaseAtMs - nowMs),
      ),
      state: { algorithm: "leaky-shaper", drainedAtMs },
    };
  }
  // The queue drains with time, and cost <= maxQueue fits an empty queue; the check absorbs
  // rounding.
  const roomAtMs = current.drainedAtMs - drainMs(limit.maxQueue - cost, limit.drainPerSec);
  let retryAfterMs = ceilMs(roomAtMs - atMs);
  for (
    let step = 0;
    limit.maxQueue -
      queuedAt(current, limit.drainPerSec, evaluatedAtMs(nowMs + retryAfterMs)) +
      UNIT_TOLERANCE <
    cost;
    step++
  ) {
    if (step === RETRY_CORRECTION_STEPS) {
      retryAfterMs = Math.max(retryAfterMs, resetAfterMs);
      break;
    }
    retryAfterMs += 1;
  }
  return {
    decision: shaped(reject("queue-full", limit.maxQueue, room, retryAfterMs, resetAfterMs), 0),
    state: current,
  };
}

/** The decision, with its delay, that a request of `cost` would get now; writes nothing. */
export function peekLeakyShaper(
  state: LeakyShaperState | undefined,
  limit: LeakyShaperLimit,
  nowMs: number,
  cost = 1,
): ShapedDecision {
  return stepLeakyShaper(state, limit, nowMs, cost).decision;
}
