import { describe, expect, it } from "vitest";
import { backoffDelayMs } from "./publish-pending-snapshots";

describe("backoffDelayMs", () => {
  it.each([
    [1, 250],
    [2, 500],
    [3, 1_000],
    [6, 8_000],
    [7, 10_000],
    [1_000, 10_000],
  ])(
    "after %i failed attempts waits %i ms (doubling from 250, capped at 10 s)",
    (attempts, delayMs) => {
      expect(backoffDelayMs(attempts)).toBe(delayMs);
    },
  );

  it("takes its start and cap from the options", () => {
    expect(
      [1, 2, 3, 4].map((attempts) => backoffDelayMs(attempts, { initialMs: 100, maxMs: 400 })),
    ).toEqual([100, 200, 400, 400]);
  });
});
