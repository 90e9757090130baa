import { describe, expect, it } from "vitest";
import { rollUpRejectionTally } from "./roll-up-rejection-tally";

const entry = (epochMinute: number, customerId: string, scope: string, count: number) => ({
  epochMinute,
  customerId,
  scope,
  count,
});

describe("rollUpRejectionTally", () => {
  it("adds each customer's minutes and limits up, the most rejected first", () => {
    const rolled = rollUpRejectionTally(
      [
        entry(10, "acme", "tier:free", 5),
        entry(11, "acme", "customer:acme", 7),
        entry(12, "acme", "tier:free", 4),
        entry(12, "hooli", "ceiling", 20),
      ],
      10,
      12,
    );
    expect(rolled.totalRejected).toBe(36);
    expect(rolled.sparklineMinutes).toBe(1);
    expect(rolled.customers).toEqual([
      {
        customerId: "hooli",
        rejected: 20,
        bindingScope: "ceiling",
        scopes: [{ scope: "ceiling", rejected: 20 }],
        sparkline: [0, 0, 20],
        lastRejectedMinuteMs: 12 * 60_000,
      },
      {
        customerId: "acme",
        rejected: 16,
        bindingScope: "tier:free",
        scopes: [
          { scope: "tier:free", rejected: 9 },
          { scope: "customer:acme", rejected: 7 },
        ],
        sparkline: [5, 7, 4],
        lastRejectedMinuteMs: 12 * 60_000,
      },
    ]);
  });

  it.each([
    ["a tie in count orders by id", [entry(1, "b", "s", 3), entry(1, "a", "s", 3)], ["a", "b"]],
    [
      "minutes outside the span are left out",
      [entry(0, "a", "s", 9), entry(1, "b", "s", 1)],
      ["b"],
    ],
    ["an empty tally lists nobody", [], []],
  ])("%s", (_label, entries, ids) => {
    expect(rollUpRejectionTally(entries, 1, 2).customers.map((c) => c.customerId)).toEqual(ids);
  });

  it("a long span adds minutes into at most 60 sparkline points", () => {
    const entries = Array.from({ length: 360 }, (_, minute) => entry(minute, "acme", "s", 1));
    const rolled = rollUpRejectionTally(entries, 0, 359);
    expect(rolled.sparklineMinutes).toBe(6);
    expect(rolled.customers[0]?.sparkline).toEqual(Array.from({ length: 60 }, () => 6));
  });
});
