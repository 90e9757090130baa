import { describe, expect, it } from "vitest";
import example from "./fixtures/example-policy.json";
import { parsePolicyDocument, type TPolicyDocument } from "./index";
import {
  diffPolicyRules,
  limitAtScope,
  type OverrideHolder,
  outrankingHolders,
} from "./policy-diff";

function examplePolicy(): TPolicyDocument {
  const parsed = parsePolicyDocument(example);
  if (!parsed.ok) throw new Error(parsed.errors[0]?.message);
  return parsed.value;
}

const bucket = (capacity: number, refillPerSec: number) =>
  ({
    algorithm: "token-bucket",
    capacity,
    refillPerSec,
    mode: "enforce",
    onStoreFailure: "open",
  }) as const;

describe("diffPolicyRules", () => {
  it("the same rules are no change", () => {
    const doc = examplePolicy();
    expect(diffPolicyRules(doc, structuredClone(doc))).toEqual({ limits: [], fields: [] });
  });

  it("a tier limit edit is one change on tier:T with old and new values", () => {
    const before = examplePolicy();
    const after = structuredClone(before);
    const free = after.tiers.find((tier) => tier.name === "free");
    if (free === undefined) throw new Error("no free tier");
    free.limit = bucket(10, 5);
    const diff = diffPolicyRules(before, after);
    expect(diff.fields).toEqual([]);
    expect(diff.limits).toEqual([
      {
        scope: "tier:free",
        reach: "tier",
        tier: "free",
        endpointClass: null,
        before: bucket(20, 10),
        after: bucket(10, 5),
      },
    ]);
  });

  it("an endpoint class edit lists each limit it adds, changes or removes, and its other fields", () => {
    const before = examplePolicy();
    const after = structuredClone(before);
    const reports = after.endpointClasses.find((c) => c.name === "reports");
    if (reports === undefined) throw new Error("no reports class");
    reports.cost = 5;
    reports.ceiling = null;
    const { free: _free, ...rest } = reports.limits;
    reports.limits = { ...rest, pro: bucket(50, 2) };
    const search = after.endpointClasses.find((c) => c.name === "search");
    if (search === undefined) throw new Error("no search class");
    search.limits = { ...search.limits, pro: bucket(40, 4) };
    const diff = diffPolicyRules(before, after);
    expect(
      diff.limits.map((change) => [change.scope, change.before !== null, change.after !== null]),
    ).toEqual([
      ["ceiling/endpoint:reports", true, false],
      ["tier:free/endpoint:reports", true, false],
      ["tier:pro/endpoint:reports", true, true],
      ["tier:pro/endpoint:search", false, true],
    ]);
    expect(diff.fields).toEqual([
      { owner: 'endpoint class "reports"', field: "cost", before: 10, after: 5 },
    ]);
  });

  it("ceilings come first and a default change is a field change", () => {
    const before = examplePolicy();
    const after = structuredClone(before);
    after.ceilings.perCustomer = { ...bucket(5000, 1000), onStoreFailure: "local" };
    after.defaultTier = "pro";
    const diff = diffPolicyRules(before, after);
    expect(diff.limits.map((change) => change.scope)).toEqual(["ceiling"]);
    expect(diff.limits[0]?.reach).toBe("ceiling");
    expect(diff.fields).toEqual([
      { owner: "settings", field: "defaultTier", before: "free", after: "pro" },
    ]);
  });

  it("key order is not a change", () => {
    const before = examplePolicy();
    const after = structuredClone(before);
    const pro = after.tiers.find((tier) => tier.name === "pro");
    if (pro === undefined) throw new Error("no pro tier");
    const { refillPerSec, capacity, ...others } = pro.limit as ReturnType<typeof bucket>;
    pro.limit = { ...others, refillPerSec, capacity } as typeof pro.limit;
    expect(diffPolicyRules(before, after).limits).toEqual([]);
  });
});

describe("outrankingHolders", () => {
  const holders: OverrideHolder[] = [
    { customerId: "a", tier: "free", endpointClass: null, source: "override", isAbsolute: true },
    {
      customerId: "b",
      tier: "free",
      endpointClass: "reports",
      source: "override",
      isAbsolute: true,
    },
    { customerId: "c", tier: "pro", endpointClass: null, source: "override", isAbsolute: true },
    { customerId: "d", tier: "free", endpointClass: null, source: "incident", isAbsolute: false },
    { customerId: "e", tier: "free", endpointClass: null, source: "incident", isAbsolute: true },
  ];
  const change = (
    scope: string,
    reach: "tier" | "ceiling",
    tier: string | null,
    endpointClass: string | null,
  ) => ({
    scope,
    reach,
    tier,
    endpointClass,
    before: bucket(1, 1),
    after: bucket(2, 2),
  });

  it.each([
    [
      "tier:free keeps overrides and absolute incidents on the account layer of free customers",
      change("tier:free", "tier", "free", null),
      ["a", "e"],
    ],
    [
      "tier:free/endpoint:reports keeps only that layer's overrides",
      change("tier:free/endpoint:reports", "tier", "free", "reports"),
      ["b"],
    ],
    ["a ceiling is never outranked", change("ceiling", "ceiling", null, null), []],
  ])("%s", (_name, limitChange, expected) => {
    expect(outrankingHolders(limitChange, holders).map((holder) => holder.customerId)).toEqual(
      expected,
    );
  });
});

describe("limitAtScope", () => {
  const doc = examplePolicy();
  it.each([
    ["tier:free", "10/s"],
    ["tier:free/endpoint:reports", "0.5/s"],
    ["tier:pro/endpoint:search", null],
    ["ceiling", "2000/s"],
    ["ceiling/endpoint:reports", "100/s"],
    ["ceiling/endpoint:search", null],
    ["address", "20/s"],
    ["address/endpoint:sign-in", "fixed"],
    ["tier:nope", null],
    ["customer:acme", null],
  ])("%s", (scope, expected) => {
    const limit = limitAtScope(doc, scope);
    if (expected === null) expect(limit).toBeNull();
    else if (expected === "fixed") expect(limit?.algorithm).toBe("fixed-window");
    else expect(limit && "refillPerSec" in limit ? `${limit.refillPerSec}/s` : null).toBe(expected);
  });
});
