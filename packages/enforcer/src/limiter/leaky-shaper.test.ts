import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AWKWARD_RUNS,
  arrivalsArbitrary,
  assertDecisionInvariants,
  awkwardScenarioArbitrary,
  replay,
} from "../testing/arrivals";
import { type LeakyShaperState, peekLeakyShaper, stepLeakyShaper } from "./leaky-shaper";
import { timeNoiseMs } from "./numeric";
import type { LeakyShaperLimit } from "./types";

const T0 = 1_700_000_000_000;

function shaper(drainPerSec: number, maxQueue: number): LeakyShaperLimit {
  return { algorithm: "leaky-shaper", drainPerSec, maxQueue };
}

function run(
  start: LeakyShaperState | undefined,
  limit: LeakyShaperLimit,
  arrivals: readonly { atMs: number; cost: number }[],
) {
  let state = start;
  const decisions = arrivals.map(({ atMs, cost }) => {
    const step = stepLeakyShaper(state, limit, atMs, cost);
    state = step.state;
    return step.decision;
  });
  return { decisions, state };
}

const burst = (count: number, atMs: number) =>
  Array.from({ length: count }, () => ({ atMs, cost: 1 }));

describe("leaky shaper: guarantees", () => {
  it("a new key's first request goes at once", () => {
    expect(stepLeakyShaper(undefined, shaper(10, 5), T0, 1).decision).toEqual({
      allowed: true,
      limit: 5,
      remaining: 4,
      retryAfterMs: 0,
      resetAfterMs: 100,
      reason: null,
      delayMs: 0,
    });
  });

  it("flattens a burst: delays space the work at drainPerSec, and a full queue rejects", () => {
    const limit = shaper(10, 5);
    const { decisions, state } = run(undefined, limit, burst(6, T0));
    expect(decisions.map((d) => d.delayMs)).toEqual([0, 100, 200, 300, 400, 0]);
    expect(decisions[5]).toMatchObject({ allowed: false, reason: "queue-full", retryAfterMs: 100 });
    const retried = stepLeakyShaper(state, limit, T0 + 100, 1).decision;
    expect(retried).toMatchObject({ allowed: true, delayMs: 400 });
  });

  it("maxQueue of one request's cost means pure spacing, no waiting", () => {
    const limit = shaper(10, 1);
    const { decisions } = run(undefined, limit, [
      { atMs: T0, cost: 1 },
      { atMs: T0 + 50, cost: 1 },
      { atMs: T0 + 100, cost: 1 },
    ]);
    expect(decisions.map((d) => [d.allowed, d.delayMs, d.retryAfterMs])).toEqual([
      [true, 0, 0],
      [false, 0, 50],
      [true, 0, 0],
    ]);
  });

  it("queues up to maxQueue at epoch-sized times despite rounding", () => {
    const limit = shaper(45, 2);
    const { decisions } = run(undefined, limit, burst(3, T0 + 0.37));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
  });

  it("a cost above maxQueue is cost-exceeds-capacity, retryAfterMs 0, and queues nothing", () => {
    const limit = shaper(10, 5);
    const { decisions } = run(undefined, limit, [
      { atMs: T0, cost: 6 },
      { atMs: T0, cost: 1 },
    ]);
    expect(decisions[0]).toMatchObject({ reason: "cost-exceeds-capacity", retryAfterMs: 0 });
    expect(decisions[1]).toMatchObject({ allowed: true, delayMs: 0 });
  });

  it("a queue-full rejection writes nothing", () => {
    const limit = shaper(1, 1);
    const { state } = run(undefined, limit, [{ atMs: T0, cost: 1 }]);
    expect(stepLeakyShaper(state, limit, T0, 1).state).toBe(state);
  });

  it("peek reports the delay a request would get without queueing it", () => {
    const limit = shaper(10, 5);
    const { state } = run(undefined, limit, burst(2, T0));
    expect(peekLeakyShaper(state, limit, T0).delayMs).toBe(200);
    expect(peekLeakyShaper(state, limit, T0).delayMs).toBe(200);
  });

  it("a fractional rate spaces work fractionally: 0.5 per second is one unit per 2 s", () => {
    const { decisions } = run(undefined, shaper(0.5, 3), burst(3, T0));
    expect(decisions.map((d) => d.delayMs)).toEqual([0, 2000, 4000]);
  });

  it("the clock going back looks like more queue, never less", () => {
    const limit = shaper(10, 5);
    const { state } = run(undefined, limit, burst(1, T0));
    expect(peekLeakyShaper(state, limit, T0 - 200).delayMs).toBe(300);
  });
});

describe("leaky shaper: properties", () => {
  const params = fc.record({
    drainPerSec: fc.double({ min: 0.05, max: 500, noNaN: true }),
    maxQueue: fc.double({ min: 1, max: 30, noNaN: true }),
  });

  it("releases work no faster than drainPerSec (to within the 1 ms rounding of delayMs)", () => {
    fc.assert(
      fc.property(
        params,
        arrivalsArbitrary({ maxGapMs: 300, maxCost: 1, isIntegral: false, startMs: T0 }),
        (p, arrivals) => {
          const limit = shaper(p.drainPerSec, p.maxQueue);
          const released: { atMs: number; cost: number }[] = [];
          for (const { arrival, decision } of replay(
            (s: LeakyShaperState | undefined, nowMs, cost) =>
              stepLeakyShaper(s, limit, nowMs, cost),
            arrivals,
          )) {
            if (decision.allowed) {
              released.push({
                atMs: arrival.atMs + decision.delayMs,
                cost: arrival.cost,
              });
            }
          }
          for (let i = 0; i < released.length; i++) {
            let costBefore = 0;
            for (let j = i + 1; j < released.length; j++) {
              costBefore += released[j - 1]?.cost ?? 0;
              const gapMs = (released[j]?.atMs ?? 0) - (released[i]?.atMs ?? 0);
              expect(gapMs).toBeGreaterThanOrEqual((costBefore * 1000) / p.drainPerSec - 1 - 1e-6);
            }
          }
        },
      ),
    );
  });

  it("never queues more than maxQueue, keeps the invariants, and a retry at +retryAfterMs is admitted", () => {
    fc.assert(
      fc.property(awkwardScenarioArbitrary(), ({ size, durationMs, arrivals }) => {
        const drainPerSec = 1000 / durationMs;
        const limit = shaper(drainPerSec, size);
        for (const { arrival, decision, after } of replay(
          (s: LeakyShaperState | undefined, nowMs, cost) => stepLeakyShaper(s, limit, nowMs, cost),
          arrivals,
        )) {
          assertDecisionInvariants(decision);
          if (decision.allowed) {
            // delayMs is rounded up to a whole millisecond, which can add up to 1 ms of drain;
            // the shaper also evaluates itself timeNoiseMs after now (a few units in the last
            // place of the instant, 0.06 ms at 2^45 ms), which can add that much again, twice at
            // most; 1e-6 covers the rounding of this very sum.
            const slackMs = 1 + 2 * timeNoiseMs(arrival.atMs);
            const queuedUnits = (decision.delayMs * drainPerSec) / 1000 + arrival.cost;
            expect(queuedUnits).toBeLessThanOrEqual(size + (slackMs * drainPerSec) / 1000 + 1e-6);
          } else {
            expect(decision.delayMs).toBe(0);
          }
          if (decision.reason === "queue-full") {
            const retryAtMs = arrival.atMs + decision.retryAfterMs;
            expect(stepLeakyShaper(after, limit, retryAtMs, arrival.cost).decision.allowed).toBe(
              true,
            );
          }
        }
      }),
      { numRuns: AWKWARD_RUNS },
    );
  });
});
