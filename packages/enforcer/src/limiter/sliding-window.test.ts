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
import { atUtc, MINUTE_MS } from "../testing/times";
import { peekSlidingWindow, type SlidingWindowState, stepSlidingWindow } from "./sliding-window";
import type { SlidingWindowLimit } from "./types";

function perWindow(limit: number, windowMs: number): SlidingWindowLimit {
  return { algorithm: "sliding-window", limit, windowMs };
}

function run(
  start: SlidingWindowState | undefined,
  limit: SlidingWindowLimit,
  arrivals: readonly { atMs: number; cost: number }[],
) {
  let state = start;
  const decisions = arrivals.map(({ atMs, cost }) => {
    const step = stepSlidingWindow(state, limit, atMs, cost);
    state = step.state;
    return step.decision;
  });
  return { decisions, state };
}

const repeat = (count: number, atMs: number) =>
  Array.from({ length: count }, () => ({ atMs, cost: 1 }));

describe("sliding window counter: the seed's worked estimate (100 per minute)", () => {
  const limit = perWindow(100, MINUTE_MS);

  it("90 in the 10:04 window and 20 so far at 10:05:15 estimate 87.5: admitted", () => {
    const spread = Array.from({ length: 90 }, (_, i) => ({
      atMs: atUtc("10:04:00") + Math.floor((i * MINUTE_MS) / 90),
      cost: 1,
    }));
    const { decisions, state } = run(undefined, limit, [
      ...spread,
      ...repeat(20, atUtc("10:05:10")),
    ]);
    expect(decisions.every((d) => d.allowed)).toBe(true);
    // remaining before the request: floor(100 - 87.5) = 12
    expect(peekSlidingWindow(state, limit, atUtc("10:05:15"), 0).remaining).toBe(12);
    expect(stepSlidingWindow(state, limit, atUtc("10:05:15"), 1).decision).toMatchObject({
      allowed: true,
      remaining: 11,
    });
  });

  it("under-counts a burst at the end of the previous window: true count 110, estimate 87.5, admitted", () => {
    const { decisions, state } = run(undefined, limit, [
      ...repeat(90, atUtc("10:04:59")),
      ...repeat(20, atUtc("10:05:10")),
    ]);
    expect(decisions.every((d) => d.allowed)).toBe(true);
    // All 110 admitted requests fall in the minute ending at 10:05:15, yet the estimate is 87.5.
    expect(peekSlidingWindow(state, limit, atUtc("10:05:15"), 0).remaining).toBe(12);
    expect(stepSlidingWindow(state, limit, atUtc("10:05:15"), 1).decision.allowed).toBe(true);
  });

  it("admits iff estimate + cost <= limit: at estimate 99.5 a cost of 1 is rejected", () => {
    // prev 50 weighted 0.99 at 10:05:00.600 is 49.5; with 50 current the estimate is 99.5.
    const { state } = run(undefined, limit, [
      ...repeat(50, atUtc("10:04:30")),
      ...repeat(50, atUtc("10:05:00.500")),
    ]);
    expect(peekSlidingWindow(state, limit, atUtc("10:05:00.600"))).toMatchObject({
      allowed: false,
      remaining: 0,
    });
    expect(peekSlidingWindow(state, limit, atUtc("10:05:00.600"), 0.5).allowed).toBe(true);
  });
});

describe("sliding window counter: guarantees", () => {
  const limit = perWindow(10, 1000);

  it("a new key's first request is admitted", () => {
    expect(stepSlidingWindow(undefined, limit, 5250, 1).decision).toEqual({
      allowed: true,
      limit: 10,
      remaining: 9,
      retryAfterMs: 0,
      resetAfterMs: 1750,
      reason: null,
    });
  });

  it("a previous window that was not the immediately preceding one counts as zero", () => {
    const { state } = run(undefined, limit, repeat(10, 5000));
    expect(peekSlidingWindow(state, limit, 6000, 0).remaining).toBe(0);
    expect(peekSlidingWindow(state, limit, 7000, 0).remaining).toBe(10);
  });

  it("retryAfterMs within the current window: when the previous window's weight has fallen enough", () => {
    // prev 10, curr 0 at 6000: estimate 10 at 6000, 9 at 6100.
    const { state } = run(undefined, limit, repeat(10, 5000));
    const rejected = stepSlidingWindow(state, limit, 6000, 1);
    expect(rejected.decision).toMatchObject({ allowed: false, retryAfterMs: 100 });
    expect(stepSlidingWindow(rejected.state, limit, 6099, 1).decision.allowed).toBe(false);
    expect(stepSlidingWindow(rejected.state, limit, 6100, 1).decision.allowed).toBe(true);
  });

  it("retryAfterMs spanning into the next window when the current count alone leaves no room", () => {
    // curr 10 at 5200: next window starts 6000 with prev 10, room for 4 at 6000 + 400.
    const { state } = run(undefined, limit, repeat(10, 5200));
    const rejected = stepSlidingWindow(state, limit, 5200, 4);
    expect(rejected.decision).toMatchObject({ allowed: false, retryAfterMs: 1200 });
    expect(stepSlidingWindow(rejected.state, limit, 6399, 4).decision.allowed).toBe(false);
    expect(stepSlidingWindow(rejected.state, limit, 6400, 4).decision.allowed).toBe(true);
  });

  it("rejection does not increment", () => {
    const { decisions } = run(undefined, limit, [
      { atMs: 5000, cost: 8 },
      { atMs: 5000, cost: 5 },
      { atMs: 5000, cost: 2 },
    ]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, false, true]);
  });

  it("a cost above the limit is cost-exceeds-capacity, retryAfterMs 0, and consumes nothing", () => {
    const { decisions } = run(undefined, limit, [
      { atMs: 5000, cost: 11 },
      { atMs: 5000, cost: 10 },
    ]);
    expect(decisions[0]).toMatchObject({ reason: "cost-exceeds-capacity", retryAfterMs: 0 });
    expect(decisions[1]?.allowed).toBe(true);
  });

  it("a 1 ms window rolls every millisecond", () => {
    const tiny = perWindow(1, 1);
    const { decisions } = run(undefined, tiny, [
      { atMs: 10, cost: 1 },
      { atMs: 10, cost: 1 },
      { atMs: 12, cost: 1 },
    ]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, false, true]);
    expect(decisions[1]?.retryAfterMs).toBe(2);
  });

  it("a window above 2^31 ms is weighted and waited for exactly", () => {
    const windowMs = 2 ** 32;
    const huge = perWindow(4, windowMs);
    const { state } = run(undefined, huge, [{ atMs: 0, cost: 4 }]);
    // Next window, a quarter in: estimate 4 * 0.75 = 3, so cost 2 waits until the weight is 2.
    const rejected = stepSlidingWindow(state, huge, windowMs + windowMs / 4, 2).decision;
    expect(rejected.retryAfterMs).toBe(windowMs / 4);
  });

  it("the clock going back into an earlier window keeps both counts (no fresh budget)", () => {
    const { state } = run(undefined, limit, repeat(10, 5100));
    expect(peekSlidingWindow(state, limit, 4900, 0).remaining).toBe(0);
  });
});

/**
 * Reference model: the seed's counter with costs and the `estimate + cost <= limit` rule, in
 * exact integer arithmetic (everything multiplied by windowMs). It finds retryAfterMs by trying
 * every later millisecond.
 */
function modelSlidingWindow(limit: number, windowMs: number) {
  let startMs = Number.NEGATIVE_INFINITY;
  let curr = 0;
  let prev = 0;
  const roll = (nowMs: number) => {
    const s = nowMs - (nowMs % windowMs);
    if (s === startMs) return { s, curr, prev };
    return { s, curr: 0, prev: s - windowMs === startMs ? curr : 0 };
  };
  const fits = (nowMs: number, cost: number) => {
    const w = roll(nowMs);
    return (w.curr + cost) * windowMs + w.prev * (windowMs - (nowMs - w.s)) <= limit * windowMs;
  };
  return (nowMs: number, cost: number) => {
    const w = roll(nowMs);
    startMs = w.s;
    curr = w.curr;
    prev = w.prev;
    if (cost > limit) return { allowed: false, retryAfterMs: 0 };
    if (!fits(nowMs, cost)) {
      let retryAfterMs = 1;
      while (!fits(nowMs + retryAfterMs, cost)) retryAfterMs++;
      return { allowed: false, retryAfterMs };
    }
    curr += cost;
    return { allowed: true, retryAfterMs: 0 };
  };
}

describe("sliding window counter: properties", () => {
  const params = fc.record({
    limit: fc.integer({ min: 1, max: 20 }),
    windowMs: fc.integer({ min: 1, max: 1500 }),
  });

  it("decides exactly like the exact-arithmetic reference model, retryAfterMs included", () => {
    fc.assert(
      fc.property(params, arrivalsArbitrary({ maxGapMs: 500, maxCost: 6 }), (p, arrivals) => {
        const limit = perWindow(p.limit, p.windowMs);
        const model = modelSlidingWindow(p.limit, p.windowMs);
        for (const { arrival, decision } of replay(
          (s: SlidingWindowState | undefined, nowMs, cost) =>
            stepSlidingWindow(s, limit, nowMs, cost),
          arrivals,
        )) {
          const expected = model(arrival.atMs, arrival.cost);
          expect(decision.allowed).toBe(expected.allowed);
          expect(decision.retryAfterMs).toBe(expected.retryAfterMs);
        }
      }),
    );
  });

  it("admits at most limit per aligned window and at most 2 * limit in any rolling window", () => {
    fc.assert(
      fc.property(params, arrivalsArbitrary({ maxGapMs: 500, maxCost: 6 }), (p, arrivals) => {
        const limit = perWindow(p.limit, p.windowMs);
        const replayed = replay(
          (s: SlidingWindowState | undefined, nowMs, cost) =>
            stepSlidingWindow(s, limit, nowMs, cost),
          arrivals,
        );
        for (const { arrival } of replayed) {
          const startMs = arrival.atMs - (arrival.atMs % p.windowMs);
          expect(admittedBetween(replayed, startMs, startMs + p.windowMs - 1)).toBeLessThanOrEqual(
            p.limit,
          );
          expect(
            admittedBetween(replayed, arrival.atMs - p.windowMs + 1, arrival.atMs),
          ).toBeLessThanOrEqual(2 * p.limit);
        }
      }),
    );
  });

  it("every decision keeps the invariants, and a retry at exactly +retryAfterMs is admitted", () => {
    fc.assert(
      fc.property(awkwardScenarioArbitrary(), ({ size, durationMs, arrivals }) => {
        const limit = perWindow(size, durationMs);
        for (const { arrival, decision, after } of replay(
          (s: SlidingWindowState | undefined, nowMs, cost) =>
            stepSlidingWindow(s, limit, nowMs, cost),
          arrivals,
        )) {
          assertDecisionInvariants(decision);
          if (decision.reason === "limit-exceeded") {
            const retryAtMs = arrival.atMs + decision.retryAfterMs;
            expect(stepSlidingWindow(after, limit, retryAtMs, arrival.cost).decision.allowed).toBe(
              true,
            );
          }
        }
      }),
      { numRuns: AWKWARD_RUNS },
    );
  });
});
