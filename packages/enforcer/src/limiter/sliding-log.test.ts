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
import { peekSlidingLog, type SlidingLogState, stepSlidingLog } from "./sliding-log";
import type { SlidingLogLimit } from "./types";

function rolling(limit: number, windowMs: number): SlidingLogLimit {
  return { algorithm: "sliding-log", limit, windowMs };
}

function run(
  start: SlidingLogState | undefined,
  limit: SlidingLogLimit,
  nowMs: number,
  costs: readonly number[],
) {
  let state = start;
  const decisions = costs.map((cost) => {
    const step = stepSlidingLog(state, limit, nowMs, cost);
    state = step.state;
    return step.decision;
  });
  return { decisions, state };
}

const ones = (count: number) => Array.from({ length: count }, () => 1);

describe("sliding log: the seed's boundary burst (100 per minute)", () => {
  it("admits 100 at 10:04:59 and rejects all of the next 100 at 10:05:01", () => {
    const limit = rolling(100, MINUTE_MS);
    const first = run(undefined, limit, atUtc("10:04:59"), ones(100));
    const second = run(first.state, limit, atUtc("10:05:01"), ones(100));
    expect(first.decisions.filter((d) => d.allowed)).toHaveLength(100);
    expect(second.decisions.filter((d) => d.allowed)).toHaveLength(0);
    expect(second.decisions[0]).toEqual({
      allowed: false,
      limit: 100,
      remaining: 0,
      retryAfterMs: 58_000,
      resetAfterMs: 58_000,
      reason: "limit-exceeded",
    });
  });

  it("keeps one entry for a burst at one instant", () => {
    const { state } = run(undefined, rolling(100, MINUTE_MS), atUtc("10:04:59"), ones(100));
    expect(state?.entries).toEqual([atUtc("10:04:59"), 100]);
  });
});

describe("sliding log: guarantees", () => {
  const limit = rolling(3, 10_000);

  it("a new key's first request is admitted", () => {
    expect(stepSlidingLog(undefined, limit, 50_000, 1).decision).toMatchObject({
      allowed: true,
      remaining: 2,
      resetAfterMs: 10_000,
    });
  });

  it("drops entries at or before now - windowMs, counting the rest exactly", () => {
    let state = run(undefined, limit, 1000, [1]).state;
    state = run(state, limit, 2000, [1]).state;
    state = run(state, limit, 3000, [1]).state;
    expect(peekSlidingLog(state, limit, 10_999).allowed).toBe(false);
    expect(peekSlidingLog(state, limit, 11_000).allowed).toBe(true);
  });

  it("retryAfterMs is when enough entries expire for the cost to fit", () => {
    let state = run(undefined, limit, 1000, [1]).state;
    state = run(state, limit, 2000, [1]).state;
    state = run(state, limit, 3000, [1]).state;
    const costTwo = stepSlidingLog(state, limit, 5000, 2);
    expect(costTwo.decision).toMatchObject({ allowed: false, retryAfterMs: 7000 });
    expect(stepSlidingLog(costTwo.state, limit, 11_999, 2).decision.allowed).toBe(false);
    expect(stepSlidingLog(costTwo.state, limit, 12_000, 2).decision.allowed).toBe(true);
  });

  it("rejection records nothing", () => {
    const { decisions, state } = run(undefined, limit, 1000, [2, 2, 2, 1]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, false, false, true]);
    expect(state?.entries).toEqual([1000, 3]);
  });

  it("a cost above the limit is cost-exceeds-capacity, retryAfterMs 0, and records nothing", () => {
    const { decisions, state } = run(undefined, limit, 1000, [4]);
    expect(decisions[0]).toMatchObject({ reason: "cost-exceeds-capacity", retryAfterMs: 0 });
    expect(state?.entries).toEqual([]);
  });

  it("cost 0 is admitted when full and records nothing", () => {
    const { decisions, state } = run(undefined, limit, 1000, [3, 0]);
    expect(decisions[1]).toMatchObject({ allowed: true, remaining: 0 });
    expect(state?.entries).toEqual([1000, 3]);
  });

  it("a 1 ms window forgets an entry one millisecond later", () => {
    const tiny = rolling(1, 1);
    const first = stepSlidingLog(undefined, tiny, 7, 1);
    expect(stepSlidingLog(first.state, tiny, 7, 1).decision).toMatchObject({
      allowed: false,
      retryAfterMs: 1,
    });
    expect(stepSlidingLog(first.state, tiny, 8, 1).decision.allowed).toBe(true);
  });

  it("a window above 2^31 ms keeps entries and waits exactly", () => {
    const windowMs = 2 ** 33;
    const huge = rolling(1, windowMs);
    const first = stepSlidingLog(undefined, huge, 0, 1);
    expect(stepSlidingLog(first.state, huge, 2 ** 32, 1).decision.retryAfterMs).toBe(2 ** 32);
  });

  it("the clock going back keeps future entries counted, expiring one window from now", () => {
    const { state } = run(undefined, limit, 20_000, [3]);
    const back = stepSlidingLog(state, limit, 15_000, 1);
    expect(back.decision).toMatchObject({ allowed: false, retryAfterMs: 10_000 });
    expect(back.state.entries).toEqual([15_000, 3]);
  });
});

/** Reference model: the seed's log, one timestamp per unit of cost, filtered on every request. */
function modelSlidingLog(limit: number, windowMs: number) {
  let hits: number[] = [];
  return (nowMs: number, cost: number) => {
    hits = hits.filter((t) => t > nowMs - windowMs);
    if (hits.length + cost > limit) {
      if (cost > limit) return { allowed: false, retryAfterMs: 0 };
      // The oldest unit whose expiry makes room: hits[excess - 1].
      const excess = hits.length + cost - limit;
      return { allowed: false, retryAfterMs: (hits[excess - 1] ?? 0) + windowMs - nowMs };
    }
    for (let i = 0; i < cost; i++) hits.push(nowMs);
    return { allowed: true, retryAfterMs: 0 };
  };
}

describe("sliding log: properties", () => {
  const params = fc.record({
    limit: fc.integer({ min: 1, max: 20 }),
    windowMs: fc.integer({ min: 1, max: 2000 }),
  });

  it("decides exactly like the reference model, retryAfterMs included", () => {
    fc.assert(
      fc.property(params, arrivalsArbitrary({ maxGapMs: 500, maxCost: 6 }), (p, arrivals) => {
        const limit = rolling(p.limit, p.windowMs);
        const model = modelSlidingLog(p.limit, p.windowMs);
        for (const { arrival, decision } of replay(
          (s: SlidingLogState | undefined, nowMs, cost) => stepSlidingLog(s, limit, nowMs, cost),
          arrivals,
        )) {
          const expected = model(arrival.atMs, arrival.cost);
          expect(decision.allowed).toBe(expected.allowed);
          expect(decision.retryAfterMs).toBe(expected.retryAfterMs);
        }
      }),
    );
  });

  it("admits at most limit in every rolling window", () => {
    fc.assert(
      fc.property(params, arrivalsArbitrary({ maxGapMs: 500, maxCost: 6 }), (p, arrivals) => {
        const limit = rolling(p.limit, p.windowMs);
        const replayed = replay(
          (s: SlidingLogState | undefined, nowMs, cost) => stepSlidingLog(s, limit, nowMs, cost),
          arrivals,
        );
        for (const { arrival } of replayed) {
          expect(
            admittedBetween(replayed, arrival.atMs - p.windowMs + 1, arrival.atMs),
          ).toBeLessThanOrEqual(p.limit);
        }
      }),
    );
  });

  it("every decision keeps the invariants, and a retry at exactly +retryAfterMs is admitted", () => {
    fc.assert(
      fc.property(awkwardScenarioArbitrary(), ({ size, durationMs, arrivals }) => {
        const limit = rolling(size, durationMs);
        for (const { arrival, decision, after } of replay(
          (s: SlidingLogState | undefined, nowMs, cost) => stepSlidingLog(s, limit, nowMs, cost),
          arrivals,
        )) {
          assertDecisionInvariants(decision);
          if (decision.reason === "limit-exceeded") {
            const retryAtMs = arrival.atMs + decision.retryAfterMs;
            expect(stepSlidingLog(after, limit, retryAtMs, arrival.cost).decision.allowed).toBe(
              true,
            );
          }
        }
      }),
      { numRuns: AWKWARD_RUNS },
    );
  });
});
