import { describe, expect, it } from "vitest";
import { DEFAULT_GUARDRAILS } from "../guardrails";
import { formatOutboundScope, parseOutboundScope } from "../scope";
import {
  checkOutboundRaise,
  outboundBudgetAt,
  outboundKeyProblem,
  snapshotOutboundBudget,
  type TSnapshotOutboundBudget,
  type TSnapshotOutboundRaise,
  ZOutboundBudget,
} from "./outbound";

describe("outbound scopes", () => {
  it.each([
    ["outbound:sendgrid", "sendgrid"],
    ["outbound:crawl-1", "crawl-1"],
    ["outbound:", null],
    ["outbound:Send", null],
    ["outbound:a/endpoint:b", null],
    ["tier:pro", null],
  ])("%s names budget %s", (text, name) => {
    expect(parseOutboundScope(text)).toBe(name);
    if (name !== null) expect(formatOutboundScope(name)).toBe(text);
  });
});

describe("outbound budgets", () => {
  it("fill in no concurrency cap, a 30 s wait and a single key", () => {
    const budget = ZOutboundBudget.parse({
      name: "sendgrid",
      limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 10 },
    });
    expect(budget).toEqual({
      name: "sendgrid",
      displayName: null,
      limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 10 },
      concurrency: null,
      maxWaitMs: 30_000,
      keyBy: "single",
      raise: null,
    });
  });

  it.each([
    [{ maxWaitMs: -1 }, "maxWaitMs must be at least 0"],
    [{ maxWaitMs: 3_600_001 }, "maxWaitMs must be at most 3600000"],
    [{ concurrency: { max: 0 } }, "concurrency.max must be at least 1"],
    [{ concurrency: { max: 5, slotTtlMs: 100 } }, "concurrency.slotTtlMs must be at least 300"],
    [{ keyBy: "url" }, "keyBy must be one of: single, host, account"],
    [{ limit: { algorithm: "leaky-shaper" } }, "algorithm must be one of"],
  ])("refuse %j: %s", (change, message) => {
    const parsed = ZOutboundBudget.safeParse({
      name: "p",
      limit: { algorithm: "fixed-window", limit: 10, windowMs: 1_000 },
      ...change,
    });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.message).join("\n")).toContain(message);
  });

  it.each([
    ["host", "example.com", null],
    ["host", "example.com:8080", null],
    ["host", "[::1]:80", null],
    ["host", "Example.com", /lower-case host name/],
    ["host", "", /lower-case host name/],
    ["account", "acct_42@eu", null],
    ["account", "", /1 to 128 characters/],
    ["single", "", null],
    ["single", "x", /must be empty/],
    ["account", "a".repeat(256), /at most 255 characters, got 256/],
  ] as const)("keyBy %s takes %j: %s", (keyBy, key, problem) => {
    const found = outboundKeyProblem(keyBy, key);
    if (problem === null) expect(found).toBeNull();
    else expect(found).toMatch(problem);
  });
});

const T0 = Date.parse("2026-03-01T12:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();
const HOUR_MS = 3_600_000;

const RAISE = {
  limit: { algorithm: "token-bucket", capacity: 30, refillPerSec: 30 },
  concurrencyMax: 8,
  startsAt: iso(T0),
  expiresAt: iso(T0 + HOUR_MS),
} as const satisfies TSnapshotOutboundRaise;

/** A provider's 10 per second, at most 4 in flight, raised to 30 per second and 8 for an hour. */
const RAISED: TSnapshotOutboundBudget = {
  name: "sendgrid",
  limit: { algorithm: "token-bucket", capacity: 10, refillPerSec: 10 },
  concurrency: { max: 4, slotTtlMs: 10_000 },
  maxWaitMs: 30_000,
  keyBy: "single",
  raise: RAISE,
};

describe("a raised outbound budget", () => {
  it.each([
    ["before its start", T0 - 1, 10, 4],
    ["at its start", T0, 30, 8],
    ["a moment before its expiry", T0 + HOUR_MS - 1, 30, 8],
    ["at its expiry: the base again, with no new version", T0 + HOUR_MS, 10, 4],
    ["long after", T0 + 48 * HOUR_MS, 10, 4],
  ])("%s (at %i ms) holds capacity %i and %i in flight", (_label, nowMs, capacity, max) => {
    const budget = outboundBudgetAt(RAISED, nowMs);
    expect(budget.limit).toMatchObject({ capacity });
    expect(budget.concurrency?.max).toBe(max);
    expect(budget.concurrency?.slotTtlMs).toBe(10_000);
  });

  it("raising only the cap keeps the limit, and only the limit keeps the cap", () => {
    const capOnly = { ...RAISED, raise: { ...RAISE, limit: null } };
    expect(outboundBudgetAt(capOnly, T0).limit).toEqual(RAISED.limit);
    expect(outboundBudgetAt(capOnly, T0).concurrency?.max).toBe(8);
    const limitOnly = { ...RAISED, raise: { ...RAISE, concurrencyMax: null } };
    expect(outboundBudgetAt(limitOnly, T0).concurrency?.max).toBe(4);
  });

  it("is published with its expiry, and a budget without one compiles as before", () => {
    const budget = ZOutboundBudget.parse({
      name: "sendgrid",
      limit: RAISED.limit,
      raise: { ...RAISE, owner: "Ada", reason: "provider raised our quota for the day" },
    });
    expect(snapshotOutboundBudget(budget).raise).toEqual(RAISE);
    expect("raise" in snapshotOutboundBudget({ ...budget, raise: null })).toBe(false);
  });

  it.each([
    ["within the guardrails", {}, []],
    [
      "a limit over 10x",
      { limit: { algorithm: "token-bucket", capacity: 101, refillPerSec: 30 } },
      ["limit.capacity"],
    ],
    [
      "a rate over 10x",
      { limit: { algorithm: "token-bucket", capacity: 30, refillPerSec: 101 } },
      ["limit.refillPerSec"],
    ],
    ["a cap over 10x", { concurrencyMax: 41 }, ["concurrencyMax"]],
    ["a cut to a quarter", { concurrencyMax: 1, limit: null }, []],
    ["over 24 hours", { expiresAt: iso(T0 + 25 * HOUR_MS) }, ["expiresAt"]],
  ] as const)("%s: errors at %j", (_label, change, paths) => {
    const raise = { ...RAISE, ...change };
    const errors = checkOutboundRaise(raise, RAISED, { guardrails: DEFAULT_GUARDRAILS });
    expect(errors.map((error) => error.path.join("."))).toEqual(paths);
  });

  it("names the guardrail it breaks, and refuses numbers for what the budget lacks", () => {
    const errors = checkOutboundRaise(
      { ...RAISE, concurrencyMax: 41 },
      { ...RAISED, limit: null },
      { guardrails: DEFAULT_GUARDRAILS, nowMs: T0 + 2 * HOUR_MS },
    );
    expect(errors).toEqual([
      {
        path: ["limit"],
        message: "this budget has no rate limit to raise; raise its concurrencyMax instead",
      },
      { path: ["expiresAt"], message: "expiresAt is already past; choose a future instant" },
      {
        path: ["concurrencyMax"],
        message:
          "concurrencyMax 41 against 4 in the cap it replaces would raise the limit 10.25x; the maximum raise is 10x (guardrails.maxIncidentFactor)",
      },
    ]);
  });
});
