import { describe, expect, it } from "vitest";
import { decisionOf, StepNumbers } from "./decision";
import {
  algorithmCodeOf,
  type LimitState,
  limitSizeOf,
  SLIDING_LOG,
  stepLimit,
  stepNumbersInto,
} from "./step-limit";
import type { LimitSpec } from "./types";

const T0 = 1_700_000_000_000;

/** The numbers of a state, in the order `stepNumbersInto` reads and writes them. */
function numbersOf(state: LimitState): number[] {
  switch (state.algorithm) {
    case "token-bucket":
      return [state.tokens, state.lastMs];
    case "leaky-meter":
      return [state.zeroRoomAtMs];
    case "fixed-window":
      return [state.windowStartMs, state.count];
    case "sliding-window":
      return [state.windowStartMs, state.currentCount, state.previousCount];
    case "sliding-log":
      throw new Error("a sliding log has no numbers");
  }
}

const LIMITS: readonly LimitSpec[] = [
  { algorithm: "token-bucket", capacity: 3, refillPerSec: 2 },
  { algorithm: "leaky-meter", burst: 3, drainPerSec: 2 },
  { algorithm: "fixed-window", limit: 3, windowMs: 1000 },
  { algorithm: "sliding-window", limit: 3, windowMs: 1000 },
];

describe("stepNumbersInto: the kernels behind stepLimit", () => {
  it.each(LIMITS)(
    "gives exactly stepLimit's decision and state, step after step: $algorithm",
    (limit) => {
      const code = algorithmCodeOf(limit);
      expect(code).not.toBe(SLIDING_LOG);
      const out = new StepNumbers();
      let state: LimitState | undefined;
      let nowMs = T0;
      // Bursts past the limit, pauses, costs 0 and above the size, and the clock going back.
      for (const [elapsedMs, cost] of [
        [0, 1],
        [0, 1],
        [0, 1],
        [0, 1],
        [10, 2],
        [400, 1],
        [0, 0],
        [-300, 1],
        [1700, 5],
        [2500, 3],
        [1, 1],
      ] as const) {
        nowMs += elapsedMs;
        const step = stepLimit(state, limit, nowMs, cost);
        const [first = 0, second = 0, third = 0] = state === undefined ? [] : numbersOf(state);
        stepNumbersInto(code, state !== undefined, first, second, third, limit, nowMs, cost, out);
        expect(decisionOf(out, limitSizeOf(limit))).toEqual(step.decision);
        const stored = numbersOf(step.state);
        expect([out.first, out.second, out.third].slice(0, stored.length)).toEqual(stored);
        state = step.state;
      }
    },
  );
});
