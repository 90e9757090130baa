import { assertTimeAndCost, assertValidLimit } from "./arguments";
import { decisionOf, StepNumbers } from "./decision";
import { ceilMs, RETRY_CORRECTION_STEPS, UNIT_TOLERANCE } from "./numeric";
import type { Decision, Step, TokenBucketLimit } from "./types";

/** What a token bucket keeps per key: two numbers. */
export interface TokenBucketState {
  readonly algorithm: "token-bucket";
  /** Balance at `lastMs`, in units of cost; never negative, never above the capacity then. */
  readonly tokens: number;
  /** When the balance was last brought up to date, on the caller's clock. */
  readonly lastMs: number;
}

/**
 * The balance at `nowMs`: lazily refilled from the elapsed time and capped at the capacity, so a
 * key idle for a day holds no more than `capacity`. A new key (`hasState` false) starts full.
 * Elapsed time below zero (the clock went back) counts as zero. The cap is today's capacity: a
 * lowered capacity clamps the stored balance, a raised one adds nothing until time refills it (an
 * edit neither resets nor refills).
 */
function tokensAt(
  hasState: boolean,
  stateTokens: number,
  stateLastMs: number,
  limit: TokenBucketLimit,
  nowMs: number,
): number {
  if (!hasState) return limit.capacity;
  const elapsedMs = nowMs - stateLastMs;
  const refilled =
    elapsedMs > 0 ? stateTokens + (elapsedMs * limit.refillPerSec) / 1000 : stateTokens;
  return Math.min(refilled, limit.capacity);
}

/** The kernel's output for the object-returning step, reused (steps never nest). */
const STEP = new StepNumbers();

/** Milliseconds until `tokens` refill to `target` at `refillPerSec`, rounded up. */
function msUntil(tokens: number, target: number, refillPerSec: number): number {
  return ceilMs(((target - tokens) * 1000) / refillPerSec);
}

/**
 * Token bucket: bursts up to `capacity`, sustained `refillPerSec`, two independent knobs. Each
 * request spends `cost` tokens; refill is lazy (`min(capacity, tokens + elapsed * rate)` at the
 * moment of the request), so idle keys cost nothing and no timer runs. Worked, capacity 20 at 10
 * per second: 20 at once are admitted; one more 50 ms later finds 0.5 tokens and is rejected with
 * `retryAfterMs` 50; after 3 quiet seconds the bucket is full again and 20 more go through.
 *
 * Cost: two numbers per key; constant work. In any interval of `t` seconds it admits at most
 * `capacity + refillPerSec * t` units of cost.
 *
 * How it fails: it does not smooth, by design: a full bucket lets `capacity` through at once.
 *
 * A rejection consumes nothing but its refill is written back (the refill that just happened is
 * real). `retryAfterMs = ceil((cost - tokens) / refillPerSec * 1000)`: 0.4 tokens, cost 1 at 10
 * per second give 60 ms. A cost above `capacity` is `cost-exceeds-capacity` with `retryAfterMs` 0
 * and consumes nothing. The balance is never stored negative. After the clock goes back, the
 * bucket re-anchors on the new reading, so the step takes no tokens away (a clock that then jumps
 * forward again refills for that span once more, never beyond capacity). `remaining` is the
 * balance rounded down; `resetAfterMs` the time until full.
 *
 * Throws on a time, cost or limit outside the limiter's bounds (`arguments.ts`).
 */
export function stepTokenBucket(
  state: TokenBucketState | undefined,
  limit: TokenBucketLimit,
  nowMs: number,
  cost: number,
): Step<TokenBucketState> {
  assertTimeAndCost(nowMs, cost);
  assertValidLimit(limit);
  return stepTokenBucketUnchecked(state, limit, nowMs, cost);
}

/** {@link stepTokenBucket} for callers that validated the limit, time and cost already. */
export function stepTokenBucketUnchecked(
  state: TokenBucketState | undefined,
  limit: TokenBucketLimit,
  nowMs: number,
  cost: number,
): Step<TokenBucketState> {
  const out = STEP;
  if (state === undefined) stepTokenBucketInto(false, 0, 0, limit, nowMs, cost, out);
  else stepTokenBucketInto(true, state.tokens, state.lastMs, limit, nowMs, cost, out);
  return {
    decision: decisionOf(out, limit.capacity),
    state: { algorithm: "token-bucket", tokens: out.first, lastMs: out.second },
  };
}

/**
 * The token bucket's step as numbers, for callers that validated the limit, time and cost: the
 * stored state is `hasState`, `stateTokens`, `stateLastMs`, and `out` receives the decision's
 * numbers and the state to store (`first` = tokens, `second` = lastMs). What
 * {@link stepTokenBucketUnchecked} runs, without building objects.
 */
export function stepTokenBucketInto(
  hasState: boolean,
  stateTokens: number,
  stateLastMs: number,
  limit: TokenBucketLimit,
  nowMs: number,
  cost: number,
  out: StepNumbers,
): void {
  const tokens = tokensAt(hasState, stateTokens, stateLastMs, limit, nowMs);
  out.second = nowMs;
  if (cost <= tokens + UNIT_TOLERANCE && cost <= limit.capacity) {
    const left = tokens > cost ? tokens - cost : 0;
    out.admit(left, msUntil(left, limit.capacity, limit.refillPerSec));
    out.first = left;
    return;
  }

  // The refilled balance is written back on rejection.
  out.first = tokens;
  const resetAfterMs = msUntil(tokens, limit.capacity, limit.refillPerSec);
  if (cost > limit.capacity) {
    out.reject("cost-exceeds-capacity", tokens, 0, resetAfterMs);
    return;
  }
  // The balance grows with time up to capacity >= cost; the check absorbs rounding.
  let retryAfterMs = msUntil(tokens, cost, limit.refillPerSec);
  for (
    let step = 0;
    tokensAt(true, tokens, nowMs, limit, nowMs + retryAfterMs) + UNIT_TOLERANCE < cost;
    step++
  ) {
    if (step === RETRY_CORRECTION_STEPS) {
      retryAfterMs = Math.max(retryAfterMs, resetAfterMs);
      break;
    }
    retryAfterMs += 1;
  }
  out.reject("limit-exceeded", tokens, retryAfterMs, resetAfterMs);
}

/** The decision a request of `cost` would get now; computes, writes nothing. */
export function peekTokenBucket(
  state: TokenBucketState | undefined,
  limit: TokenBucketLimit,
  nowMs: number,
  cost = 1,
): Decision {
  return stepTokenBucket(state, limit, nowMs, cost).decision;
}
