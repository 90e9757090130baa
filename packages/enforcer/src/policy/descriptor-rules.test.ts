import { describe, expect, it } from "vitest";
import { applyReplaces, DescriptorRuleIndex } from "./descriptor-rules";
import type { TSnapshotDescriptorRuleEntry } from "./entries";

function rule(
  id: string,
  descriptor: [string, string | null][],
  extra: Partial<TSnapshotDescriptorRuleEntry> = {},
): TSnapshotDescriptorRuleEntry {
  return {
    id,
    domain: "d",
    descriptor: descriptor.map(([key, value]) => ({ key, value })),
    limit: { algorithm: "fixed-window", limit: 1, windowMs: 1_000 },
    mode: "enforce",
    onStoreFailure: "open",
    name: null,
    replaces: [],
    wildcardCounter: "per-value",
    detailedMetric: false,
    ...extra,
  };
}

const index = new DescriptorRuleIndex([
  rule("key", [["k", null]]),
  rule("exact", [["k", "v"]]),
  rule("wild", [["k", "v*"]]),
  rule("wilder", [["k", "va*"]]),
  rule("shared", [["s", "x*"]], { wildcardCounter: "shared" }),
  rule("nested", [
    ["a", "1"],
    ["b", null],
  ]),
  rule("off", [["k", "off"]], { mode: "off" }),
]);

describe("DescriptorRuleIndex.match", () => {
  it.each([
    [[["k", "v"]], "exact"],
    [[["k", "vx"]], "wild"],
    [[["k", "vax"]], "wilder"],
    [[["k", "other"]], "key"],
    [[["k", "off"]], "key"],
    [
      [
        ["a", "1"],
        ["b", "2"],
      ],
      "nested",
    ],
    [[["a", "1"]], null],
    [
      [
        ["k", "v"],
        ["b", "2"],
      ],
      null,
    ],
    [
      [
        ["a", "2"],
        ["b", "2"],
      ],
      null,
    ],
    [[["z", "v"]], null],
  ] as const)("%j matches %s", (entries, expected) => {
    const match = index.match(
      "d",
      entries.map(([key, value]) => ({ key, value })),
    );
    expect(match?.rule.id ?? null).toBe(expected);
  });

  it("counts per value unless a wildcard is shared", () => {
    const subject = (key: string, value: string) => index.match("d", [{ key, value }])?.subject;
    expect(subject("k", "vx")).not.toBe(subject("k", "vy"));
    expect(subject("k", "a")).not.toBe(subject("k", "b"));
    expect(subject("s", "x1")).toBe(subject("s", "x2"));
  });

  it("knows nothing of other domains", () => {
    expect(index.match("other", [{ key: "k", value: "v" }])).toBeNull();
  });
});

describe("applyReplaces", () => {
  it("drops matches whose rule another match replaces, and only those", () => {
    const base = { rule: rule("base", [["u", null]], { name: "per-user" }) };
    const vip = {
      rule: rule(
        "vip",
        [
          ["v", "y"],
          ["u", null],
        ],
        { replaces: ["per-user"] },
      ),
    };
    const other = { rule: rule("other", [["o", null]], { name: "other" }) };
    expect(applyReplaces([base, vip, other, null])).toEqual([null, vip, other, null]);
    expect(applyReplaces([base, other])).toEqual([base, other]);
  });
});
