import { describe, expect, it } from "vitest";
import { applyReplaces, DescriptorRuleIndex, ruleDescriptors } from "./descriptor-rules";
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

describe("ruleDescriptors", () => {
  const DAY = { algorithm: "fixed-window", limit: 10, windowMs: 86_400_000 } as const;
  const NOW_MS = Date.parse("2026-01-01T12:00:00Z");
  const rules = new DescriptorRuleIndex([
    rule("per-user", [["u", null]], { name: "per-user", limit: DAY }),
    rule("vip", [["vip", null]], { replaces: ["per-user"], limit: "unlimited" }),
    rule("denied", [["x", null]], { limit: "deny" }),
    rule("tenant", [["t", null]], {
      limit: DAY,
      raises: [
        {
          id: "acme",
          descriptor: [{ key: "t", value: "acme" }],
          factor: 3,
          limit: null,
          startsAt: "2026-01-01T11:00:00Z",
          expiresAt: "2026-01-01T13:00:00Z",
        },
      ],
    }),
  ]);
  const ruled = (...descriptors: [string, string][]) =>
    ruleDescriptors(
      rules,
      "d",
      descriptors.map(([key, value]) => [{ key, value }]),
      NOW_MS,
    );

  it("a replaced rule names the rules replacing it; the replacing rule decides", () => {
    const [user, vip] = ruled(["u", "bob"], ["vip", "yes"]);
    expect(user).toMatchObject({ kind: "replaced", by: [{ id: "vip" }] });
    expect(vip).toMatchObject({ kind: "unlimited", raise: null });
  });

  it("alone, the rule decides with its limit; deny and unmatched say so", () => {
    expect(ruled(["u", "bob"], ["x", "1"], ["nope", "1"])).toMatchObject([
      { kind: "limited", limit: DAY },
      { kind: "limited", limit: "deny" },
      { kind: "unmatched" },
    ]);
  });

  it("the raise in force for the value sets its limit, other values keep the rule's", () => {
    const [acme, other] = ruled(["t", "acme"], ["t", "hooli"]);
    expect(acme).toMatchObject({ kind: "limited", raise: { id: "acme" }, limit: { limit: 30 } });
    expect(other).toMatchObject({ kind: "limited", raise: null, limit: DAY });
    const later = ruleDescriptors(rules, "d", [[{ key: "t", value: "acme" }]], NOW_MS + 3_600_000);
    expect(later[0]).toMatchObject({ raise: null, limit: DAY });
  });
});
