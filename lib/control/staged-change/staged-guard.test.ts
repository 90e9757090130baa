import { describe, expect, it } from "vitest";
import {
  describeTrip,
  judgeWindow,
  nextStepAction,
  type SideCounts,
  stepGuard,
  ZStagedGuard,
} from "./staged-guard";

const guard = ZStagedGuard.parse({
  marginPercent: 5,
  minRequests: 100,
  windowMs: 10_000,
  consecutiveWindows: 2,
});

const counts = (
  sliceRequests: number,
  sliceRejected: number,
  restRequests: number,
  restRejected: number,
): SideCounts => ({ sliceRequests, sliceRejected, restRequests, restRejected });

describe("judgeWindow", () => {
  it.each([
    ["too few slice requests are not judged", counts(99, 99, 1000, 0), "too-few-requests"],
    ["60 % against 1 % is over a 5-point margin", counts(100, 60, 1000, 10), "over-margin"],
    ["exactly the margin is within it", counts(100, 6, 100, 1), "within-margin"],
    ["like the rest is within it", counts(200, 2, 2000, 20), "within-margin"],
    ["a rest with no traffic counts as 0 %", counts(100, 6, 0, 0), "over-margin"],
  ] as const)("%s", (_name, window, verdict) => {
    expect(judgeWindow(guard, window)).toBe(verdict);
  });
});

describe("stepGuard", () => {
  it("takes a baseline first, judges each ended window, and trips after two in a row", () => {
    const first = stepGuard(guard, null, counts(0, 0, 0, 0), 0);
    expect(first.window).toBeNull();
    const early = stepGuard(guard, first.state, counts(50, 30, 500, 5), 9_999);
    expect(early.window).toBeNull();
    const one = stepGuard(guard, first.state, counts(100, 60, 1000, 10), 10_000);
    expect(one.window?.verdict).toBe("over-margin");
    expect(one.trippedBy).toBeNull();
    const two = stepGuard(guard, one.state, counts(200, 120, 2000, 20), 20_000);
    expect(two.trippedBy).toEqual([
      { ...counts(100, 60, 1000, 10), windowEndMs: 10_000 },
      { ...counts(100, 60, 1000, 10), windowEndMs: 20_000 },
    ]);
    expect(two.state.stepSliceRequests).toBe(200);
  });

  it("a window within the margin ends the streak; a quiet window leaves it", () => {
    const base = stepGuard(guard, null, counts(0, 0, 0, 0), 0).state;
    const over = stepGuard(guard, base, counts(100, 60, 1000, 10), 10_000).state;
    const quiet = stepGuard(guard, over, counts(110, 70, 1100, 11), 20_000).state;
    expect(quiet.streak).toHaveLength(1);
    const fine = stepGuard(guard, quiet, counts(210, 71, 2100, 21), 30_000).state;
    expect(fine.streak).toEqual([]);
  });

  it("a smaller reading counts as no traffic, never negative", () => {
    const base = stepGuard(guard, null, counts(500, 300, 500, 5), 0).state;
    const after = stepGuard(guard, base, counts(400, 200, 400, 4), 10_000);
    expect(after.window).toMatchObject({ sliceRequests: 0, verdict: "too-few-requests" });
  });
});

describe("nextStepAction", () => {
  const change = (stepIndex: number, isHoldNotified = false) => ({
    stepIndex,
    steps: [{ dwellMs: 60_000 }, { dwellMs: 60_000 }],
    stepStartedAtMs: 0,
    isHoldNotified,
  });
  it.each([
    ["waits out the dwell", change(0), 100, 59_999, { kind: "wait" }],
    ["advances after the dwell with enough requests", change(0), 100, 60_000, { kind: "advance" }],
    ["completes at the last step", change(1), 100, 60_000, { kind: "complete" }],
    ["holds a quiet step", change(0), 99, 60_000, { kind: "hold", shouldNotify: false }],
    [
      "tells the operator after three dwells",
      change(0),
      99,
      180_000,
      { kind: "hold", shouldNotify: true },
    ],
    [
      "tells the operator once",
      change(0, true),
      99,
      500_000,
      { kind: "hold", shouldNotify: false },
    ],
  ] as const)("%s", (_name, current, requests, nowMs, action) => {
    expect(nextStepAction(current, guard, requests, nowMs)).toEqual(action);
  });
});

describe("describeTrip", () => {
  it("names the margin, the windows and each window's figures", () => {
    expect(
      describeTrip(guard, [
        { ...counts(100, 60, 1000, 10), windowEndMs: 10_000 },
        { ...counts(120, 72, 900, 9), windowEndMs: 20_000 },
      ]),
    ).toBe(
      "reverted by its guard: the slice's rejection rate exceeded the rest's by more than 5 points for 2 windows of 10 s in a row: slice 60/100 (60.0 %) vs rest 10/1000 (1.0 %); slice 72/120 (60.0 %) vs rest 9/900 (1.0 %)",
    );
  });
});
