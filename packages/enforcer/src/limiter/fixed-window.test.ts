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
import { type FixedWindowState, peekFixedWindow, stepFixedWindow } from "./fixed-window";
import type { FixedWindowLimit } from "./types";

function perWindow(limit: number, windowMs: number): FixedWindowLimit {
  return { algorithm: "fixed-window", limit, windowMs };
}

function run(
  start: FixedWindowState | undefined,
  limit: FixedWindowLimit,
  nowMs: number,
  costs: readonly number[],
) {
  let state = start;
  const decisions = costs.map((cost) => {
    const step = stepFixedWindow(state, limit, nowMs, cost);
    state = step.state;
    return step.decision;
  });
  return { decisions, state };
}

const ones = (count: number) => Array.from({ length: count }, () => 1);

describe("fixed window: the seed's boundary burst (100 per minute)", () => {
  it("admits 100 at 10:04:59 and another 100 at 10:05:01: 200 in two seconds", () => {
    const limit = perWindow(100, MINUTE_MS);
    const first = run(undefined, limit, atUtc("10:04:59"), ones(100));
    const second = run(first.state, limit, atUtc("10:05:01"), ones(100));
    expect(first.decisions.filter((d) => d.allowed)).toHaveLength(100);
    expect(second.decisions.filter((d) => d.allowed)).toHaveLength(100);
  });
});

describe("fixed window: guarantees", () => {
  const limit = perWindow(10, MINUTE_MS);

  it("a new key's first request is admitted", () => {
    expect(stepFixedWindow(undefined, limit, atUtc("10:05:15"), 1).decision).toEqual({
      allowed: true,
      limit: 10,
      remaining: 9,
      retryAfterMs: 0,
      resetAfterMs: 45_000,
      reason: null,
    });
  });

  it("rejects past the limit until the next window, which starts at the top of the minute", () => {
    const { decisions, state } = run(undefined, limit, atUtc("10:05:15"), ones(11));
    expect(decisions[10]).toEqual({
      allowed: false,
      limit: 10,
      remaining: 0,
      retryAfterMs: 45_000,
      resetAfterMs: 45_000,
      reason: "limit-exceeded",
    });
    expect(stepFixedWindow(state, limit, atUtc("10:05:59.999"), 1).decision.allowed).toBe(false);
    expect(stepFixedWindow(state, limit, atUtc("10:06:00"), 1).decision.allowed).toBe(true);
  });

  it("rejection does not increment", () => {
    const { decisions } = run(undefined, limit, atUtc("10:05:15"), [8, 5, 5, 2]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, false, false, true]);
  });

  it("a cost above the limit is cost-exceeds-capacity, retryAfterMs 0, and consumes nothing", () => {
    const { decisions } = run(undefined, limit, atUtc("10:05:15"), [11, 10]);
    expect(decisions[0]).toMatchObject({
      allowed: false,
      reason: "cost-exceeds-capacity",
      retryAfterMs: 0,
      remaining: 10,
    });
    expect(decisions[1]?.allowed).toBe(true);
  });

  it("cost 0 is admitted at the limit and consumes nothing", () => {
    const { decisions } = run(undefined, limit, atUtc("10:05:15"), [10, 0, 1]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
  });

  it("a 1 ms window admits `limit` per millisecond", () => {
    const tiny = perWindow(1, 1);
    const first = stepFixedWindow(undefined, tiny, 5000, 1);
    const second = stepFixedWindow(first.state, tiny, 5000, 1);
    expect(second.decision).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(stepFixedWindow(second.state, tiny, 5001, 1).decision.allowed).toBe(true);
  });

  it("a window above 2^31 ms is cut and waited for exactly", () => {
    const windowMs = 2 ** 32;
    const huge = perWindow(1, windowMs);
    const startMs = 3 * windowMs;
    const first = stepFixedWindow(undefined, huge, startMs + 5, 1);
    const rejected = stepFixedWindow(first.state, huge, startMs + 5, 1).decision;
    expect(rejected.retryAfterMs).toBe(windowMs - 5);
  });

  it("the clock going back into an earlier window keeps the count (no fresh budget)", () => {
    const { state } = run(undefined, limit, atUtc("10:05:01"), ones(10));
    const back = stepFixedWindow(state, limit, atUtc("10:04:58"), 1);
    expect(back.decision).toMatchObject({ allowed: false, retryAfterMs: 2000 });
    expect(stepFixedWindow(back.state, limit, atUtc("10:05:00"), 1).decision.allowed).toBe(true);
  });

  it("a lowered limit applies to what the window already admitted", () => {
    const { state } = run(undefined, limit, atUtc("10:05:01"), [6]);
    expect(peekFixedWindow(state, perWindow(5, MINUTE_MS), atUtc("10:05:02"))).toMatchObject({
      allowed: false,
      remaining: 0,
    });
    expect(peekFixedWindow(state, perWindow(20, MINUTE_MS), atUtc("10:05:02"))).toMatchObject({
      allowed: true,
      remaining: 13,
    });
  });

  it("works on a clock before 0 (a manual clock), cutting windows downwards", () => {
    const second = perWindow(1, 1000);
    const first = stepFixedWindow(undefined, second, -1500, 1);
    expect(stepFixedWindow(first.state, second, -1001, 1).decision.allowed).toBe(false);
    expect(stepFixedWindow(first.state, second, -1000, 1).decision.allowed).toBe(true);
  });
});

/** Reference model: the seed's fixed window, with costs. */
function modelFixedWindow(limit: number, windowMs: number) {
  let windowStartMs = Number.NEGATIVE_INFINITY;
  let count = 0;
  return (nowMs: number, cost: number) => {
    const startMs = nowMs - (nowMs % windowMs);
    if (startMs !== windowStartMs) {
      windowStartMs = startMs;
      count = 0;
    }
    if (count + cost > limit) {
      return { allowed: false, retryAfterMs: cost > limit ? 0 : startMs + windowMs - nowMs };
    }
    count += cost;
    return { allowed: true, retryAfterMs: 0 };
  };
}

describe("fixed window: properties", () => {
  const params = fc.record({
    limit: fc.integer({ min: 1, max: 20 }),
    windowMs: fc.integer({ min: 1, max: 2000 }),
  });

  it("decides exactly like the reference model, retryAfterMs included", () => {
    fc.assert(
      fc.property(params, arrivalsArbitrary({ maxGapMs: 700, maxCost: 6 }), (p, arrivals) => {
        const limit = perWindow(p.limit, p.windowMs);
        const model = modelFixedWindow(p.limit, p.windowMs);
        for (const { arrival, decision } of replay(
          (s: FixedWindowState | undefined, nowMs, cost) => stepFixedWindow(s, limit, nowMs, cost),
          arrivals,
        )) {
          const expected = model(arrival.atMs, arrival.cost);
          expect(decision.allowed).toBe(expected.allowed);
          expect(decision.retryAfterMs).toBe(expected.retryAfterMs);
        }
      }),
    );
  });

  it("admits at most limit per aligned window and at most 2 * limit in any span of windowMs", () => {
    fc.assert(
      fc.property(params, arrivalsArbitrary({ maxGapMs: 700, maxCost: 6 }), (p, arrivals) => {
        const limit = perWindow(p.limit, p.windowMs);
        const replayed = replay(
          (s: FixedWindowState | undefined, nowMs, cost) => stepFixedWindow(s, limit, nowMs, cost),
          arrivals,
        );
        for (const { arrival } of replayed) {
          const startMs = arrival.atMs - (arrival.atMs % p.windowMs);
          expect(admittedBetween(replayed, startMs, startMs + p.windowMs - 1)).toBeLessThanOrEqual(
            p.limit,
          );
          expect(
            admittedBetween(replayed, arrival.atMs, arrival.atMs + p.windowMs - 1),
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
          (s: FixedWindowState | undefined, nowMs, cost) => stepFixedWindow(s, limit, nowMs, cost),
          arrivals,
        )) {
          assertDecisionInvariants(decision);
          if (decision.reason === "limit-exceeded") {
            const retryAtMs = arrival.atMs + decision.retryAfterMs;
            expect(stepFixedWindow(after, limit, retryAtMs, arrival.cost).decision.allowed).toBe(
              true,
            );
          }
        }
      }),
      { numRuns: AWKWARD_RUNS },
    );
  });
});
