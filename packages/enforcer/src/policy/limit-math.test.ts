import { describe, expect, it } from "vitest";
import type { LimitSpec } from "../limiter/types";
import { limitRatePerSec, limitSize, MAX_LIMIT_COUNT, scaleLimit } from "./limit-math";

describe("scaleLimit", () => {
  it.each<[string, LimitSpec, number, LimitSpec]>([
    [
      "a token bucket scales burst and rate",
      { algorithm: "token-bucket", capacity: 20, refillPerSec: 10 },
      3,
      { algorithm: "token-bucket", capacity: 60, refillPerSec: 30 },
    ],
    [
      "a window keeps its length and admits factor times as much",
      { algorithm: "sliding-window", limit: 100, windowMs: 60_000 },
      0.5,
      { algorithm: "sliding-window", limit: 50, windowMs: 60_000 },
    ],
    [
      "counts round down, never granting more than the factor",
      { algorithm: "leaky-meter", burst: 25, drainPerSec: 5 },
      0.3,
      { algorithm: "leaky-meter", burst: 7, drainPerSec: 1.5 },
    ],
    [
      "binary fractions do not lose a whole unit",
      { algorithm: "fixed-window", limit: 30, windowMs: 1000 },
      0.1,
      { algorithm: "fixed-window", limit: 3, windowMs: 1000 },
    ],
    [
      "a count never falls below 1",
      { algorithm: "sliding-log", limit: 3, windowMs: 1000 },
      0.1,
      { algorithm: "sliding-log", limit: 1, windowMs: 1000 },
    ],
    [
      "a count never exceeds the model's bound",
      { algorithm: "token-bucket", capacity: 900_000_000, refillPerSec: 1 },
      10,
      { algorithm: "token-bucket", capacity: MAX_LIMIT_COUNT, refillPerSec: 10 },
    ],
  ])("%s", (_, spec, factor, expected) => {
    expect(scaleLimit(spec, factor)).toEqual(expected);
  });

  it("reads size and sustained rate for every algorithm", () => {
    expect(limitSize({ algorithm: "fixed-window", limit: 100, windowMs: 60_000 })).toBe(100);
    expect(limitRatePerSec({ algorithm: "fixed-window", limit: 100, windowMs: 50_000 })).toBe(2);
    expect(limitRatePerSec({ algorithm: "leaky-meter", burst: 5, drainPerSec: 0.25 })).toBe(0.25);
  });
});
