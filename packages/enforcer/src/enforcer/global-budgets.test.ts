import { describe, expect, it } from "vitest";
import { globalLimitScopes, prepareSnapshot } from "../policy/prepare";
import { resolveLimits } from "../policy/resolve";
import { exampleSnapshot } from "../testing/policy-factory";
import { GlobalBudgets } from "./global-budgets";

/** The example policy with the pro tier's limit and the per-customer ceiling global. */
function globalSnapshot() {
  return prepareSnapshot(
    exampleSnapshot((input) => {
      const pro = input.tiers[1];
      if (pro !== undefined) pro.limit = { ...pro.limit, global: true };
      input.ceilings.perCustomer = { ...input.ceilings.perCustomer, global: true };
    }),
  );
}

function driven(startMs = 1_000) {
  const clock = { ms: startMs, nowMs: () => clock.ms };
  return clock;
}

const request = { customerId: "acme", tier: "pro", method: "GET", path: "/v1/things" };

describe("global limits in the policy", () => {
  it("lists the enforced global limits' scopes", () => {
    expect(globalLimitScopes(globalSnapshot())).toEqual(["ceiling", "tier:pro"]);
    expect(globalLimitScopes(prepareSnapshot(exampleSnapshot()))).toEqual([]);
  });

  it("marks the enforced check of a global limit, and only it", () => {
    const resolution = resolveLimits(globalSnapshot(), request, 0);
    const marked = resolution.checks.filter((check) => check.global === true);
    expect(marked.map((check) => check.scope)).toEqual(["tier:pro", "ceiling"]);
  });
});

describe("GlobalBudgets", () => {
  it("scales a global limit by the share while its lease runs, then by the floor", () => {
    const clock = driven();
    const budgets = new GlobalBudgets({ clock, floorShare: 0.02 });
    const resolution = resolveLimits(globalSnapshot(), request, 0);
    // Redis's clock reads 50_000 when this process's reads 1_000: the lease ends at 1_500 here.
    budgets.update(
      new Map([
        ["tier:pro", { share: 0.25, leaseExpiresAtMs: 50_500, floorShare: 0.05 }],
        ["ceiling", null],
      ]),
      50_000,
      1_000,
    );
    const limitOf = (scope: string, nowMs: number) =>
      budgets.apply(resolution, 1, nowMs).checks.find((check) => check.scope === scope)?.limit;
    expect(limitOf("tier:pro", 1_499)).toEqual({
      algorithm: "token-bucket",
      capacity: 50,
      refillPerSec: 25,
    });
    // No share written for the ceiling: the floor.
    expect(limitOf("ceiling", 1_499)).toEqual({
      algorithm: "token-bucket",
      capacity: 200,
      refillPerSec: 40,
    });
    // The lease over: the floor the reading carried.
    expect(limitOf("tier:pro", 1_500)).toEqual({
      algorithm: "token-bucket",
      capacity: 10,
      refillPerSec: 5,
    });
  });

  it("counts demand per global limit, whatever the decision, and never leases them", () => {
    const clock = driven();
    const budgets = new GlobalBudgets({ clock });
    const resolution = resolveLimits(globalSnapshot(), request, 0);
    const scaled = budgets.apply(resolution, 3, 1_000);
    budgets.apply(resolution, 2, 1_001);
    expect(budgets.isGlobal(scaled.checks)).toBe(true);
    expect(budgets.isGlobal(resolution.checks)).toBe(false);
    expect(budgets.takeDemand()).toEqual(
      new Map([
        ["tier:pro", 5],
        ["ceiling", 5],
      ]),
    );
    expect(budgets.takeDemand().size).toBe(0);
  });

  it("gives every customer of a tier the same scaled checks while the share stays", () => {
    // The caches keyed by a check list, a check or a limit (encoded store arguments, validation,
    // the flood guard, RateLimit-Policy) then hit for global limits as for any other.
    const clock = driven();
    const budgets = new GlobalBudgets({ clock });
    const snapshot = globalSnapshot();
    // Two customers without overrides (acme has some: its checks are its own).
    const one = resolveLimits(snapshot, { ...request, customerId: "c-one" }, 0);
    const two = resolveLimits(snapshot, { ...request, customerId: "c-two" }, 0);
    const first = budgets.apply(one, 1, 1_000);
    expect(budgets.apply(two, 1, 1_000).checks).toBe(first.checks);
    expect(budgets.apply(one, 1, 1_001)).toBe(first);
    expect(Object.isFrozen(first.checks)).toBe(true);
    expect(first.checks.every((check) => Object.isFrozen(check))).toBe(true);
    // A new share: new checks, for every resolution.
    budgets.update(
      new Map([["tier:pro", { share: 0.5, leaseExpiresAtMs: 60_000, floorShare: 0.02 }]]),
      50_000,
      1_002,
    );
    const again = budgets.apply(one, 1, 1_002);
    expect(again.checks).not.toBe(first.checks);
    expect(again.checks.find((check) => check.scope === "tier:pro")?.limit).toEqual({
      algorithm: "token-bucket",
      capacity: 100,
      refillPerSec: 50,
    });
    expect(budgets.apply(two, 1, 1_002).checks).toBe(again.checks);
    expect(budgets.isGlobal(again.checks)).toBe(true);
  });

  it("leaves a resolution without a global limit as it is", () => {
    const budgets = new GlobalBudgets({ clock: driven() });
    const resolution = resolveLimits(prepareSnapshot(exampleSnapshot()), request, 0);
    expect(budgets.apply(resolution, 1, 1_000)).toBe(resolution);
    expect(budgets.takeDemand().size).toBe(0);
  });
});
