import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AWKWARD_RUNS,
  admittedBetween,
  arrivalsArbitrary,
  assertDecisionInvariants,
  awkwardScenarioArbitrary,
  replay,
} from "../testing/arrivals";
import { DAY_MS } from "../testing/times";
import { peekTokenBucket, stepTokenBucket, type TokenBucketState } from "./token-bucket";
import type { TokenBucketLimit } from "./types";

const T0 = 1_700_000_000_000;

function bucket(capacity: number, refillPerSec: number): TokenBucketLimit {
  return { algorithm: "token-bucket", capacity, refillPerSec };
}

function state(tokens: number, lastMs: number): TokenBucketState {
  return { algorithm: "token-bucket", tokens, lastMs };
}

/** Runs `count` requests of cost 1 at `nowMs`, returning the decisions and the final state. */
function burst(
  start: TokenBucketState | undefined,
  limit: TokenBucketLimit,
  nowMs: number,
  count: number,
) {
  let current = start;
  const decisions = [];
  for (let i = 0; i < count; i++) {
    const step = stepTokenBucket(current, limit, nowMs, 1);
    decisions.push(step.decision);
    current = step.state;
  }
  return { decisions, state: current };
}

describe("token bucket: the seed's worked minute (capacity 20, 10 per second)", () => {
  const limit = bucket(20, 10);

  it("admits a batch of 20 at once, leaving the bucket empty", () => {
    const { decisions } = burst(undefined, limit, T0, 20);
    expect(decisions.every((d) => d.allowed)).toBe(true);
    expect(decisions.map((d) => d.remaining)).toEqual([
      19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
    ]);
  });

  it("rejects the next request 50 ms later with retryAfterMs 50, and admits it at exactly +50 ms", () => {
    const empty = burst(undefined, limit, T0, 20).state;
    const rejected = stepTokenBucket(empty, limit, T0 + 50, 1);
    expect(rejected.decision).toEqual({
      allowed: false,
      limit: 20,
      remaining: 0,
      retryAfterMs: 50,
      resetAfterMs: 1950,
      reason: "limit-exceeded",
    });
    expect(stepTokenBucket(rejected.state, limit, T0 + 100, 1).decision.allowed).toBe(true);
  });

  it("is full again after 3 quiet seconds and admits 20 more, then rejects the 21st", () => {
    const empty = burst(undefined, limit, T0, 20).state;
    const afterReject = stepTokenBucket(empty, limit, T0 + 50, 1).state;
    const { decisions } = burst(afterReject, limit, T0 + 3050, 21);
    expect(decisions.slice(0, 20).every((d) => d.allowed)).toBe(true);
    expect(decisions[20]?.allowed).toBe(false);
  });
});

describe("token bucket: guarantees", () => {
  it.each([
    { tokens: 0.4, cost: 1, refillPerSec: 10, retryAfterMs: 60 },
    { tokens: 0.5, cost: 1, refillPerSec: 10, retryAfterMs: 50 },
    { tokens: 0, cost: 1, refillPerSec: 10, retryAfterMs: 100 },
    { tokens: 0, cost: 3, refillPerSec: 10, retryAfterMs: 300 },
    { tokens: 0.1, cost: 1, refillPerSec: 3, retryAfterMs: 300 },
    { tokens: 0, cost: 1, refillPerSec: 0.5, retryAfterMs: 2000 },
    { tokens: 2.7, cost: 3, refillPerSec: 1000, retryAfterMs: 1 },
  ])(
    "retryAfterMs = ceil((cost - tokens) / rate * 1000): $tokens tokens, cost $cost at $refillPerSec/s wait $retryAfterMs ms",
    ({ tokens, cost, refillPerSec, retryAfterMs }) => {
      const limit = bucket(10, refillPerSec);
      const rejected = stepTokenBucket(state(tokens, T0), limit, T0, cost);
      expect(rejected.decision.retryAfterMs).toBe(retryAfterMs);
      expect(stepTokenBucket(rejected.state, limit, T0 + retryAfterMs, cost).decision.allowed).toBe(
        true,
      );
      expect(
        stepTokenBucket(rejected.state, limit, T0 + retryAfterMs - 1, cost).decision.allowed,
      ).toBe(false);
    },
  );

  it("a new key starts full: its first request is admitted with capacity - cost remaining", () => {
    const { decision, state: after } = stepTokenBucket(undefined, bucket(20, 10), T0, 1);
    expect(decision).toMatchObject({ allowed: true, remaining: 19, retryAfterMs: 0, reason: null });
    expect(after).toEqual(state(19, T0));
  });

  it("a key idle for a day cannot bank more than capacity", () => {
    const limit = bucket(5, 1);
    const { decisions } = burst(state(0, T0), limit, T0 + DAY_MS, 6);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false]);
  });

  it("rejection does not consume, but writes the refill back", () => {
    const limit = bucket(10, 10);
    const rejected = stepTokenBucket(state(0, T0), limit, T0 + 30, 1);
    expect(rejected.decision.allowed).toBe(false);
    expect(rejected.state.lastMs).toBe(T0 + 30);
    expect(rejected.state.tokens).toBeCloseTo(0.3, 12);
    expect(stepTokenBucket(rejected.state, limit, T0 + 100, 1).decision.allowed).toBe(true);
  });

  it("a cost above capacity is cost-exceeds-capacity, retryAfterMs 0, and consumes nothing", () => {
    const limit = bucket(5, 1);
    const { decision, state: after } = stepTokenBucket(state(5, T0), limit, T0, 6);
    expect(decision).toMatchObject({
      allowed: false,
      reason: "cost-exceeds-capacity",
      retryAfterMs: 0,
      remaining: 5,
    });
    expect(after.tokens).toBe(5);
  });

  it("a cost equal to capacity fits a full bucket", () => {
    expect(stepTokenBucket(undefined, bucket(5, 1), T0, 5).decision.allowed).toBe(true);
  });

  it("cost 0 is admitted even from an empty bucket and consumes nothing", () => {
    const { decision, state: after } = stepTokenBucket(state(0, T0), bucket(5, 1), T0, 0);
    expect(decision).toMatchObject({ allowed: true, remaining: 0 });
    expect(after.tokens).toBe(0);
  });

  it("capacity 1 admits one request, then one per refill interval", () => {
    const limit = bucket(1, 2);
    const first = stepTokenBucket(undefined, limit, T0, 1);
    const second = stepTokenBucket(first.state, limit, T0, 1);
    expect([first.decision.allowed, second.decision.allowed]).toEqual([true, false]);
    expect(second.decision.retryAfterMs).toBe(500);
    expect(stepTokenBucket(second.state, limit, T0 + 500, 1).decision.allowed).toBe(true);
  });

  it("a fractional rate refills fractionally: 0.25 per second needs 4 s per token", () => {
    const limit = bucket(1, 0.25);
    const first = stepTokenBucket(undefined, limit, T0, 1);
    const rejected = stepTokenBucket(first.state, limit, T0 + 1000, 1);
    expect(rejected.decision.retryAfterMs).toBe(3000);
  });

  it("a wait above 2^31 ms is reported exactly (no 32-bit overflow)", () => {
    const perMonth = 1 / (30 * 24 * 3600); // one token per 30 days
    const limit = bucket(1, perMonth);
    const empty = stepTokenBucket(undefined, limit, T0, 1).state;
    const rejected = stepTokenBucket(empty, limit, T0, 1).decision;
    expect(rejected.retryAfterMs).toBe(30 * DAY_MS);
    expect(rejected.retryAfterMs).toBeGreaterThan(2 ** 31);
  });

  it("the clock going back takes no tokens away and grants none", () => {
    const limit = bucket(10, 10);
    const half = stepTokenBucket(state(5, T0), limit, T0, 0).state;
    const back = stepTokenBucket(half, limit, T0 - 10_000, 0);
    expect(back.decision.remaining).toBe(5);
    expect(back.state).toEqual(state(5, T0 - 10_000));
    // Elapsed time is then measured from the new reading.
    expect(stepTokenBucket(back.state, limit, T0 - 9_900, 0).decision.remaining).toBe(6);
  });

  it("a lowered capacity clamps the stored tokens; a raised one adds none", () => {
    const full = state(20, T0);
    expect(peekTokenBucket(full, bucket(5, 1), T0, 0).remaining).toBe(5);
    expect(stepTokenBucket(full, bucket(5, 1), T0, 0).state.tokens).toBe(5);
    const seven = state(7, T0);
    expect(peekTokenBucket(seven, bucket(50, 1), T0, 0).remaining).toBe(7);
    expect(peekTokenBucket(seven, bucket(50, 1), T0 + 3000, 0).remaining).toBe(10);
  });

  it("resetAfterMs is the time until full", () => {
    expect(stepTokenBucket(state(2, T0), bucket(10, 4), T0, 1).decision.resetAfterMs).toBe(2250);
    expect(stepTokenBucket(undefined, bucket(10, 4), T0, 0).decision.resetAfterMs).toBe(0);
  });

  it("peek reports the decision a step would make, and remaining before any cost with cost 0", () => {
    const current = state(3.5, T0);
    const limit = bucket(10, 1);
    expect(peekTokenBucket(current, limit, T0 + 500)).toEqual(
      stepTokenBucket(current, limit, T0 + 500, 1).decision,
    );
    expect(peekTokenBucket(current, limit, T0 + 500, 0).remaining).toBe(4);
  });

  it.each([
    { name: "NaN time", nowMs: Number.NaN, cost: 1, limit: bucket(1, 1) },
    { name: "negative cost", nowMs: T0, cost: -1, limit: bucket(1, 1) },
    { name: "infinite cost", nowMs: T0, cost: Number.POSITIVE_INFINITY, limit: bucket(1, 1) },
    { name: "zero rate", nowMs: T0, cost: 1, limit: bucket(1, 0) },
    { name: "negative capacity", nowMs: T0, cost: 1, limit: bucket(-1, 1) },
    { name: "NaN capacity", nowMs: T0, cost: 1, limit: bucket(Number.NaN, 1) },
  ])("a mistake throws instead of deciding: $name", ({ nowMs, cost, limit }) => {
    expect(() => stepTokenBucket(undefined, limit, nowMs, cost)).toThrow(RangeError);
  });
});

/**
 * Reference model: the seed's token bucket in exact integer arithmetic. Balances are kept in
 * thousandths of a token, and with whole-millisecond times and whole rates per second a refill of
 * `elapsedMs * ratePerSec` thousandths is exact, so the model has no rounding at all.
 */
class ExactTokenBucket {
  #milliTokens: number;
  #lastMs: number | undefined;

  constructor(
    private readonly capacity: number,
    private readonly ratePerSec: number,
  ) {
    this.#milliTokens = capacity * 1000;
  }

  take(nowMs: number, cost: number): { allowed: boolean; retryAfterMs: number } {
    if (this.#lastMs !== undefined && nowMs > this.#lastMs) {
      this.#milliTokens = Math.min(
        this.capacity * 1000,
        this.#milliTokens + (nowMs - this.#lastMs) * this.ratePerSec,
      );
    }
    this.#lastMs = nowMs;
    if (cost > this.capacity) return { allowed: false, retryAfterMs: 0 };
    if (this.#milliTokens >= cost * 1000) {
      this.#milliTokens -= cost * 1000;
      return { allowed: true, retryAfterMs: 0 };
    }
    return {
      allowed: false,
      retryAfterMs: Math.ceil((cost * 1000 - this.#milliTokens) / this.ratePerSec),
    };
  }
}

describe("token bucket: properties", () => {
  const limits = fc.record({
    capacity: fc.integer({ min: 1, max: 30 }),
    refillPerSec: fc.integer({ min: 1, max: 50 }),
  });

  it("decides exactly like the exact-arithmetic reference model, retryAfterMs included", () => {
    fc.assert(
      fc.property(limits, arrivalsArbitrary({ maxGapMs: 400, maxCost: 8 }), (params, arrivals) => {
        const limit = bucket(params.capacity, params.refillPerSec);
        const model = new ExactTokenBucket(params.capacity, params.refillPerSec);
        for (const { arrival, decision } of replay(
          (s: TokenBucketState | undefined, nowMs, cost) => stepTokenBucket(s, limit, nowMs, cost),
          arrivals,
        )) {
          const expected = model.take(arrival.atMs, arrival.cost);
          expect(decision.allowed).toBe(expected.allowed);
          expect(decision.retryAfterMs).toBe(expected.retryAfterMs);
        }
      }),
    );
  });

  it("never admits more than capacity + rate * t in any interval of t", () => {
    fc.assert(
      fc.property(
        fc.record({
          capacity: fc.double({ min: 0.5, max: 40, noNaN: true }),
          refillPerSec: fc.double({ min: 0.01, max: 200, noNaN: true }),
        }),
        arrivalsArbitrary({ maxGapMs: 300, maxCost: 6, isIntegral: false }),
        (params, arrivals) => {
          const limit = bucket(params.capacity, params.refillPerSec);
          const replayed = replay(
            (s: TokenBucketState | undefined, nowMs, cost) =>
              stepTokenBucket(s, limit, nowMs, cost),
            arrivals,
          );
          for (const from of replayed) {
            for (const to of replayed) {
              if (to.arrival.atMs < from.arrival.atMs) continue;
              const spanMs = to.arrival.atMs - from.arrival.atMs;
              const bound = params.capacity + (params.refillPerSec * spanMs) / 1000;
              expect(
                admittedBetween(replayed, from.arrival.atMs, to.arrival.atMs),
              ).toBeLessThanOrEqual(bound + 1e-6);
            }
          }
        },
      ),
    );
  });

  it("every decision keeps the invariants, and a retry at exactly +retryAfterMs is admitted", () => {
    fc.assert(
      fc.property(awkwardScenarioArbitrary(), ({ size, durationMs, arrivals }) => {
        const limit = bucket(size, 1000 / durationMs);
        for (const { arrival, decision, after } of replay(
          (s: TokenBucketState | undefined, nowMs, cost) => stepTokenBucket(s, limit, nowMs, cost),
          arrivals,
        )) {
          assertDecisionInvariants(decision);
          if (decision.reason === "limit-exceeded") {
            const retryAtMs = arrival.atMs + decision.retryAfterMs;
            expect(stepTokenBucket(after, limit, retryAtMs, arrival.cost).decision.allowed).toBe(
              true,
            );
          }
        }
      }),
      { numRuns: AWKWARD_RUNS },
    );
  });
});
