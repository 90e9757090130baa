import { describe, expect, it } from "vitest";
import { describePropagation } from "./propagation";

describe("describePropagation", () => {
  const at = (applied: string) =>
    ["eu-west", "us-east", "us-west"].map((region) => ({
      region,
      isApplied: applied.includes(region),
    }));

  it.each([
    ["eu-west us-east", "applied in eu-west and us-east, us-west pending since 14:02"],
    ["eu-west us-east us-west", "applied in every region (eu-west, us-east and us-west)"],
    ["", "eu-west, us-east and us-west pending since 14:02"],
    ["us-west", "applied in us-west, eu-west and us-east pending since 14:02"],
  ])("with %j applied says %j", (applied, sentence) => {
    expect(describePropagation(at(applied), "14:02")).toBe(sentence);
  });

  it("says so when no region is configured", () => {
    expect(describePropagation([], "14:02")).toBe("no regions are configured");
  });
});
