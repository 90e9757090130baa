import { describe, expect, it } from "vitest";
import {
  type ApprovalRules,
  approvalReasons,
  DEFAULT_APPROVAL_RULES,
  limitDecreasePercent,
} from "./approval-rules";

const on: ApprovalRules = { ...DEFAULT_APPROVAL_RULES, isEnabled: true };
const bucket = (capacity: number, refillPerSec: number) => ({
  algorithm: "token-bucket" as const,
  capacity,
  refillPerSec,
  mode: "enforce" as const,
  onStoreFailure: "local" as const,
});
const tier = (capacity: number, refillPerSec: number) => ({
  name: "pro",
  displayName: null,
  limit: bucket(capacity, refillPerSec),
  version: 1,
});

describe("limitDecreasePercent", () => {
  it.each([
    ["the same limit", bucket(100, 10), bucket(100, 10), 0],
    ["a raise", bucket(100, 10), bucket(200, 20), 0],
    ["a smaller burst alone", bucket(100, 10), bucket(60, 10), 40],
    ["a slower refill alone", bucket(100, 10), bucket(100, 5), 50],
    ["the larger of the two drops", bucket(100, 10), bucket(90, 2), 80],
  ])("%s", (_label, before, after, percent) => {
    expect(limitDecreasePercent(before, after)).toBeCloseTo(percent, 9);
  });

  it("compares across algorithms by size and sustained rate", () => {
    const window = {
      algorithm: "fixed-window" as const,
      limit: 60,
      windowMs: 60_000,
      mode: "enforce" as const,
      onStoreFailure: "local" as const,
    };
    // 60 per minute is 1 per second against 10: 90 % slower.
    expect(limitDecreasePercent(bucket(60, 10), window)).toBeCloseTo(90, 9);
  });
});

describe("approvalReasons", () => {
  const cases: {
    label: string;
    rules?: ApprovalRules;
    change: Parameters<typeof approvalReasons>[1];
    reasons: string[];
  }[] = [
    {
      label: "approvals off: nothing is gated",
      rules: DEFAULT_APPROVAL_RULES,
      change: {
        action: "tier.delete",
        entityType: "tier",
        entityId: "pro",
        before: tier(1, 1),
        after: null,
        changedEntries: null,
      },
      reasons: [],
    },
    {
      label: "a tier lowered by exactly 25 % passes",
      change: {
        action: "tier.update",
        entityType: "tier",
        entityId: "pro",
        before: tier(100, 100),
        after: tier(75, 75),
        changedEntries: null,
      },
      reasons: [],
    },
    {
      label: "a tier lowered by 26 % is gated",
      change: {
        action: "tier.update",
        entityType: "tier",
        entityId: "pro",
        before: tier(100, 100),
        after: tier(74, 100),
        changedEntries: null,
      },
      reasons: ['tier "pro"\'s limit is lowered by 26 % (more than 25 %)'],
    },
    {
      label: "a promotion recorded on a tier is judged the same way",
      change: {
        action: "candidate.promote",
        entityType: "tier",
        entityId: "pro",
        before: tier(100, 100),
        after: tier(10, 10),
        changedEntries: null,
      },
      reasons: ['tier "pro"\'s limit is lowered by 90 % (more than 25 %)'],
    },
    {
      label: "a new tier is not gated",
      change: {
        action: "tier.create",
        entityType: "tier",
        entityId: "pro",
        before: null,
        after: tier(1, 1),
        changedEntries: null,
      },
      reasons: [],
    },
    {
      label: "deleting a tier is gated",
      change: {
        action: "tier.delete",
        entityType: "tier",
        entityId: "pro",
        before: tier(1, 1),
        after: null,
        changedEntries: null,
      },
      reasons: ['tier "pro" is deleted'],
    },
    {
      label: "deleting is not gated when the setting is off",
      rules: { ...on, isDeletionGated: false },
      change: {
        action: "endpoint-class.delete",
        entityType: "endpoint-class",
        entityId: "x",
        before: {},
        after: null,
        changedEntries: null,
      },
      reasons: [],
    },
    {
      label: "any ceiling change is gated, a raise included",
      change: {
        action: "settings.update",
        entityType: "settings",
        entityId: "settings",
        before: { ceilings: { perCustomer: bucket(10, 1) }, defaultTier: "free" },
        after: { ceilings: { perCustomer: bucket(20, 2) }, defaultTier: "free" },
        changedEntries: null,
      },
      reasons: ["the global ceilings change"],
    },
    {
      label: "a settings change that leaves the ceilings alone is not",
      change: {
        action: "settings.update",
        entityType: "settings",
        entityId: "settings",
        before: { ceilings: { perCustomer: bucket(10, 1) }, defaultTier: "free" },
        after: { ceilings: { perCustomer: bucket(10, 1) }, defaultTier: "pro" },
        changedEntries: null,
      },
      reasons: [],
    },
    {
      label: "an endpoint class names each lowered limit",
      change: {
        action: "endpoint-class.update",
        entityType: "endpoint-class",
        entityId: "reports",
        before: {
          limits: { free: bucket(10, 10), pro: bucket(100, 100) },
          anonymousLimit: null,
          ceiling: bucket(50, 50),
        },
        after: {
          limits: { free: bucket(5, 5), pro: bucket(100, 100) },
          anonymousLimit: null,
          ceiling: bucket(10, 10),
        },
        changedEntries: null,
      },
      reasons: [
        'endpoint class "reports"\'s limit for tier "free" is lowered by 50 % (more than 25 %)',
        'endpoint class "reports"\'s ceiling is lowered by 80 % (more than 25 %)',
      ],
    },
    {
      label: "an import over the threshold is gated",
      change: {
        action: "policy.import",
        entityType: "policy",
        entityId: "policy",
        before: {},
        after: {},
        changedEntries: 101,
      },
      reasons: ["the import changes 101 policy entries (more than 100)"],
    },
    {
      label: "an import at the threshold is not",
      change: {
        action: "policy.import",
        entityType: "policy",
        entityId: "policy",
        before: {},
        after: {},
        changedEntries: 100,
      },
      reasons: [],
    },
    {
      label: "an unreadable limit is treated as needing approval",
      change: {
        action: "tier.update",
        entityType: "tier",
        entityId: "pro",
        before: { limit: "?" },
        after: tier(1, 1),
        changedEntries: null,
      },
      reasons: ['tier "pro"\'s limit could not be compared'],
    },
    {
      label: "customer overrides are never gated",
      change: {
        action: "override.update",
        entityType: "customer-override",
        entityId: "customer:acme",
        before: { limit: bucket(100, 100) },
        after: { limit: bucket(1, 1) },
        changedEntries: null,
      },
      reasons: [],
    },
  ];
  it.each(cases)("$label", ({ rules, change, reasons }) => {
    expect(approvalReasons(rules ?? on, change)).toEqual(reasons);
  });
});

describe("a staged change's start is judged as the edit it ends in", () => {
  const spec = (capacity: number, refillPerSec: number) => ({
    algorithm: "token-bucket" as const,
    capacity,
    refillPerSec,
  });
  const start = (target: string, previous: object | null, limit: object) => ({
    action: "staged-change.start" as const,
    entityType: "staged-change" as const,
    entityId: "staged-1",
    before: null,
    after: { id: "staged-1", target, limit, previousLimit: previous, steps: [] },
    changedEntries: null,
  });

  it.each([
    {
      name: "a tier cut by half",
      change: start("tier:pro", spec(100, 10), spec(50, 5)),
      reasons: ['tier "pro"\'s limit is lowered by 50 % (more than 25 %)'],
    },
    {
      name: "a tier cut by a fifth",
      change: start("tier:pro", spec(100, 10), spec(80, 8)),
      reasons: [],
    },
    {
      name: "a class's limit for a tier cut by half",
      change: start("tier:pro/endpoint:search", spec(100, 10), spec(50, 5)),
      reasons: [
        'endpoint class "search"\'s limit for tier "pro" is lowered by 50 % (more than 25 %)',
      ],
    },
    {
      name: "a new limit for a tier on a class",
      change: start("tier:pro/endpoint:search", null, spec(50, 5)),
      reasons: [],
    },
    {
      name: "any global ceiling change",
      change: start("ceiling", spec(100, 10), spec(200, 20)),
      reasons: ["the global ceilings change"],
    },
    {
      name: "an unreadable start",
      change: { ...start("tier:pro", null, spec(1, 1)), after: { target: "tier:pro" } },
      reasons: ["the staged change's limits could not be compared"],
    },
  ])("$name", ({ change, reasons }) => {
    expect(approvalReasons(on, change)).toEqual(reasons);
  });

  it("its steps, completion and revert need nothing more", () => {
    const advance = {
      ...start("tier:pro", spec(100, 10), spec(10, 1)),
      action: "staged-change.advance" as const,
    };
    expect(approvalReasons(on, advance)).toEqual([]);
  });
});
