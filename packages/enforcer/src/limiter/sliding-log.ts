import { assertTimeAndCost, assertValidLimit } from "./arguments";
import { admit, reject } from "./decision";
import { ceilMs, numberAt, RETRY_CORRECTION_STEPS, UNIT_TOLERANCE } from "./numeric";
import type { Decision, SlidingLogLimit, Step } from "./types";

/** What a sliding log keeps per key: one entry per instant at which cost was admitted. */
export interface SlidingLogState {
  readonly algorithm: "sliding-log";
  /**
   * Flat pairs `[atMs, cost, atMs, cost, ...]`, oldest first, `atMs` non-decreasing. Requests
   * admitted at the same instant share one entry, so a burst of 100 costs one pair, not 100.
   * Treat as immutable: every step returns a new array when anything changes.
   */
  readonly entries: readonly number[];
}

/**
 * The entries still inside the window ending at `nowMs`: those at or before `nowMs - windowMs`
 * are dropped. An entry after `nowMs` means the clock went back; it is moved to `nowMs`, so it
 * still counts but expires one window from now rather than leaving the key stuck for as long as
 * the clock was ahead. Returns the stored array itself when nothing changed.
 */
function liveEntries(
  state: SlidingLogState | undefined,
  windowMs: number,
  nowMs: number,
): readonly number[] {
  if (state === undefined) return [];
  const entries = state.entries;
  const cutoffMs = nowMs - windowMs;
  let firstLive = 0;
  while (firstLive < entries.length && numberAt(entries, firstLive) <= cutoffMs) firstLive += 2;
  const isAhead = entries.length > 0 && numberAt(entries, entries.length - 2) > nowMs;
  if (firstLive === 0 && !isAhead) return entries;
  const live = entries.slice(firstLive);
  if (isAhead) {
    for (let i = 0; i < live.length; i += 2) {
      if (numberAt(live, i) > nowMs) live[i] = nowMs;
    }
  }
  return live;
}

function sumOfCosts(entries: readonly number[]): number {
  let used = 0;
  for (let i = 1; i < entries.length; i += 2) used += numberAt(entries, i);
  return used;
}

function fitsAt(
  state: SlidingLogState,
  limit: SlidingLogLimit,
  atMs: number,
  cost: number,
): boolean {
  const used = sumOfCosts(liveEntries(state, limit.windowMs, atMs));
  return used + cost <= limit.limit + UNIT_TOLERANCE;
}

/**
 * The exact instant enough of the oldest entries have expired for `cost` to fit: an entry at
 * `atMs` stops counting at `atMs + windowMs`. The excess is at most what the live entries hold
 * (cost <= limit), so at the latest it is the instant the newest entry expires.
 */
function roomAtMs(live: readonly number[], windowMs: number, excess: number): number {
  let expired = 0;
  let i = 0;
  for (; i < live.length - 2; i += 2) {
    expired += numberAt(live, i + 1);
    if (expired >= excess - UNIT_TOLERANCE) break;
  }
  return numberAt(live, i) + windowMs;
}

function resetAfterMs(live: readonly number[], windowMs: number, nowMs: number): number {
  return live.length === 0 ? 0 : ceilMs(numberAt(live, live.length - 2) + windowMs - nowMs);
}

/**
 * Sliding window log: at most `limit` units of cost in every rolling window of `windowMs`,
 * exactly. Each admitted request records its instant and its cost; a request is admitted iff the
 * cost recorded after `nowMs - windowMs`, plus its own, is at most `limit`.
 *
 * Cost: memory and work grow with traffic, one pair of numbers (16 bytes) per distinct admitted
 * instant still in the window, so up to `limit` pairs per key, and every step walks and copies
 * them: O(entries) time and allocation. Right where the count must be exact (billing), wasteful in
 * front of an ordinary API.
 *
 * How it fails: only by cost: a key allowed 10,000 per hour holds up to 10,000 pairs.
 *
 * A rejection records nothing; `retryAfterMs` is when enough of the oldest entries expire for
 * `cost` to fit (rounded up to a whole millisecond). A cost above `limit` is
 * `cost-exceeds-capacity` with `retryAfterMs` 0 and consumes nothing. Expired entries are dropped
 * from the returned state even on rejection (that is not consumption).
 *
 * Throws on a time, cost or limit outside the limiter's bounds (`arguments.ts`).
 */
export function stepSlidingLog(
  state: SlidingLogState | undefined,
  limit: SlidingLogLimit,
  nowMs: number,
  cost: number,
): Step<SlidingLogState> {
  assertTimeAndCost(nowMs, cost);
  assertValidLimit(limit);
  return stepSlidingLogUnchecked(state, limit, nowMs, cost);
}

/** {@link stepSlidingLog} for callers that validated the limit, time and cost already. */
export function stepSlidingLogUnchecked(
  state: SlidingLogState | undefined,
  limit: SlidingLogLimit,
  nowMs: number,
  cost: number,
): Step<SlidingLogState> {
  const live = liveEntries(state, limit.windowMs, nowMs);
  const current: SlidingLogState =
    state !== undefined && live === state.entries
      ? state
      : { algorithm: "sliding-log", entries: live };
  const used = sumOfCosts(live);
  const available = limit.limit - used;

  if (cost > limit.limit) {
    return {
      decision: reject(
        "cost-exceeds-capacity",
        limit.limit,
        available,
        0,
        resetAfterMs(live, limit.windowMs, nowMs),
      ),
      state: current,
    };
  }
  if (cost <= available + UNIT_TOLERANCE) {
    const next = cost > 0 ? appendEntry(live, nowMs, cost) : live;
    return {
      decision: admit(limit.limit, available - cost, resetAfterMs(next, limit.windowMs, nowMs)),
      state: next === live ? current : { algorithm: "sliding-log", entries: next },
    };
  }
  // Once every live entry has expired, cost <= limit fits; the check absorbs rounding.
  const resetMs = resetAfterMs(live, limit.windowMs, nowMs);
  let retryAfterMs = ceilMs(roomAtMs(live, limit.windowMs, used + cost - limit.limit) - nowMs);
  for (let step = 0; !fitsAt(current, limit, nowMs + retryAfterMs, cost); step++) {
    if (step === RETRY_CORRECTION_STEPS) {
      retryAfterMs = Math.max(retryAfterMs, resetMs);
      break;
    }
    retryAfterMs += 1;
  }
  return {
    decision: reject("limit-exceeded", limit.limit, available, retryAfterMs, resetMs),
    state: current,
  };
}

/** A copy of `live` with `cost` recorded at `nowMs`, merged into the last entry if same instant. */
function appendEntry(live: readonly number[], nowMs: number, cost: number): number[] {
  const lastAtIndex = live.length - 2;
  if (lastAtIndex >= 0 && numberAt(live, lastAtIndex) === nowMs) {
    const merged = live.slice();
    merged[lastAtIndex + 1] = numberAt(live, lastAtIndex + 1) + cost;
    return merged;
  }
  const appended = live.slice();
  appended.push(nowMs, cost);
  return appended;
}

/** The decision a request of `cost` would get now; computes, writes nothing. */
export function peekSlidingLog(
  state: SlidingLogState | undefined,
  limit: SlidingLogLimit,
  nowMs: number,
  cost = 1,
): Decision {
  return stepSlidingLog(state, limit, nowMs, cost).decision;
}
