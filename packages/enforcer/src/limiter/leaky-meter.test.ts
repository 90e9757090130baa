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
import { type LeakyMeterState, peekLeakyMeter, stepLeakyMeter } from "./leaky-meter";
import { stepTokenBucket, type TokenBucketState } from "./token-bucket";
import type { LeakyMeterLimit } from "./types";

const T0 = 1_700_000_000_000;

function meter(burst: number, drainPerSec: number): LeakyMeterLimit {
  return { algorithm: "leaky-meter", burst, drainPerSec };
}

function run(
  start: LeakyMeterState | undefined,
  limit: LeakyMeterLimit,
  nowMs: number,
  costs: readonly number[],
) {
  let state = start;
  const decisions = costs.map((cost) => {
    const step = stepLeakyMeter(state, limit, nowMs, cost);
    state = step.state;
    return step.decision;
  });
  return { decisions, state };
}

const ones = (count: number) => Array.from({ length: count }, () => 1);

describe("leaky meter: guarantees", () => {
  it("a new key starts full: its first request is admitted", () => {
    expect(stepLeakyMeter(undefined, meter(20, 10), T0, 1).decision).toEqual({
      allowed: true,
      limit: 20,
      remaining: 19,
      retryAfterMs: 0,
      resetAfterMs: 100,
      reason: null,
    });
  });

  it("runs the token bucket's worked minute: 20 at once, +50 ms rejected with 50 ms, full after 3 s", () => {
    const limit = meter(20, 10);
    const batch = run(undefined, limit, T0, ones(20));
    expect(batch.decisions.every((d) => d.allowed)).toBe(true);
    const rejected = stepLeakyMeter(batch.state, limit, T0 + 50, 1);
    expect(rejected.decision).toMatchObject({ allowed: false, retryAfterMs: 50, remaining: 0 });
    const again = run(rejected.state, limit, T0 + 3050, ones(21));
    expect(again.decisions.filter((d) => d.allowed)).toHaveLength(20);
  });

  it("0.4 units of room, cost 1 at 10 per second: retryAfterMs 60", () => {
    const limit = meter(1, 10);
    const empty = run(undefined, limit, T0, [1]).state;
    const rejected = stepLeakyMeter(empty, limit, T0 + 40, 1);
    expect(rejected.decision.retryAfterMs).toBe(60);
    expect(stepLeakyMeter(rejected.state, limit, T0 + 100, 1).decision.allowed).toBe(true);
  });

  it("a key idle for a day cannot bank more than burst", () => {
    const limit = meter(5, 1);
    const empty = run(undefined, limit, T0, [5]).state;
    const { decisions } = run(empty, limit, T0 + DAY_MS, ones(6));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false]);
  });

  it("a raised burst adds no room; a lowered one clamps it", () => {
    const { state } = run(undefined, meter(10, 1), T0, [3]);
    expect(peekLeakyMeter(state, meter(100, 1), T0, 0).remaining).toBe(7);
    expect(peekLeakyMeter(state, meter(100, 1), T0 + 5000, 0).remaining).toBe(12);
    expect(peekLeakyMeter(state, meter(4, 1), T0, 0).remaining).toBe(4);
    // The clamp is written: after raising the burst back, the lowered burst's room is all there is.
    const clamped = stepLeakyMeter(state, meter(4, 1), T0, 1).state;
    expect(peekLeakyMeter(clamped, meter(10, 1), T0, 0).remaining).toBe(3);
  });

  it.each([
    { burst: 2, drainPerSec: 45 },
    { burst: 3, drainPerSec: 7 },
    { burst: 1, drainPerSec: 3 },
  ])(
    "admits a full burst at once at epoch-sized times despite rounding: burst $burst at $drainPerSec/s",
    ({ burst, drainPerSec }) => {
      const limit = meter(burst, drainPerSec);
      const idle = run(undefined, limit, T0 + 0.37, [0]).state;
      const { decisions } = run(idle, limit, T0 + 0.37, ones(burst + 1));
      expect(decisions.map((d) => d.allowed)).toEqual([...ones(burst).map(() => true), false]);
    },
  );

  it("rejection writes nothing", () => {
    const limit = meter(2, 1);
    const { state } = run(undefined, limit, T0, [2]);
    const rejected = stepLeakyMeter(state, limit, T0 + 10, 1);
    expect(rejected.decision.allowed).toBe(false);
    expect(rejected.state).toBe(state);
  });

  it("a cost above burst is cost-exceeds-capacity, retryAfterMs 0, and consumes nothing", () => {
    const { decisions } = run(undefined, meter(5, 1), T0, [6, 5]);
    expect(decisions[0]).toMatchObject({ reason: "cost-exceeds-capacity", retryAfterMs: 0 });
    expect(decisions[1]?.allowed).toBe(true);
  });

  it("cost 0 is admitted with no room and consumes nothing", () => {
    const { decisions } = run(undefined, meter(1, 1), T0, [1, 0, 1]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
  });

  it("a wait above 2^31 ms is reported exactly", () => {
    const limit = meter(1, 1 / (30 * 24 * 3600));
    const { decisions } = run(undefined, limit, T0, [1, 1]);
    expect(decisions[1]?.retryAfterMs).toBe(30 * DAY_MS);
  });

  it("the clock going back hides room until it catches up, and never adds any", () => {
    const limit = meter(10, 10);
    const { state } = run(undefined, limit, T0, [0]);
    expect(peekLeakyMeter(state, limit, T0 - 500, 0).remaining).toBe(5);
    expect(peekLeakyMeter(state, limit, T0 - 2000, 0).remaining).toBe(0);
    expect(peekLeakyMeter(state, limit, T0, 0).remaining).toBe(10);
  });
});

describe("leaky meter: properties", () => {
  it("admits exactly what a token bucket with the same numbers admits, with the same waits", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 50 }),
        arrivalsArbitrary({ maxGapMs: 400, maxCost: 8, startMs: T0 }),
        (burst, ratePerSec, arrivals) => {
          const limit = meter(burst, ratePerSec);
          const asBucket = {
            algorithm: "token-bucket",
            capacity: burst,
            refillPerSec: ratePerSec,
          } as const;
          const bucketDecisions = replay(
            (s: TokenBucketState | undefined, nowMs, cost) =>
              stepTokenBucket(s, asBucket, nowMs, cost),
            arrivals,
          );
          replay(
            (s: LeakyMeterState | undefined, nowMs, cost) => stepLeakyMeter(s, limit, nowMs, cost),
            arrivals,
          ).forEach(({ decision }, i) => {
            const expected = bucketDecisions[i]?.decision;
            expect(decision.allowed).toBe(expected?.allowed);
            expect(decision.retryAfterMs).toBe(expected?.retryAfterMs);
            expect(decision.remaining).toBe(expected?.remaining);
          });
        },
      ),
    );
  });

  it("never admits more than burst + rate * t in any interval of t", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.5, max: 40, noNaN: true }),
        fc.double({ min: 0.01, max: 200, noNaN: true }),
        arrivalsArbitrary({ maxGapMs: 300, maxCost: 6, isIntegral: false, startMs: T0 }),
        (burst, drainPerSec, arrivals) => {
          const limit = meter(burst, drainPerSec);
          const replayed = replay(
            (s: LeakyMeterState | undefined, nowMs, cost) => stepLeakyMeter(s, limit, nowMs, cost),
            arrivals,
          );
          for (const from of replayed) {
            for (const to of replayed) {
              if (to.arrival.atMs < from.arrival.atMs) continue;
              const bound = burst + (drainPerSec * (to.arrival.atMs - from.arrival.atMs)) / 1000;
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
        const limit = meter(size, 1000 / durationMs);
        for (const { arrival, decision, after } of replay(
          (s: LeakyMeterState | undefined, nowMs, cost) => stepLeakyMeter(s, limit, nowMs, cost),
          arrivals,
        )) {
          assertDecisionInvariants(decision);
          if (decision.reason === "limit-exceeded") {
            const retryAtMs = arrival.atMs + decision.retryAfterMs;
            expect(stepLeakyMeter(after, limit, retryAtMs, arrival.cost).decision.allowed).toBe(
              true,
            );
          }
        }
      }),
      { numRuns: AWKWARD_RUNS },
    );
  });
});
