import { describe, expect, it } from "vitest";
import { sparklinePoints } from "./sparkline-points";

describe("sparklinePoints", () => {
  it.each([
    ["no values draw nothing", [], ""],
    ["one value sits in the middle at the top", [5], "50,1"],
    ["all zeros lie on the bottom", [0, 0], "1,19 99,19"],
    ["the largest reaches the top, 0 the bottom", [0, 10, 5], "1,19 50,1 99,10"],
    ["negative and not-finite values read as 0", [-3, Number.NaN, 4], "1,19 50,19 99,1"],
  ])("%s", (_label, values, points) => {
    expect(sparklinePoints(values, 100, 20, 2)).toBe(points);
  });
});
