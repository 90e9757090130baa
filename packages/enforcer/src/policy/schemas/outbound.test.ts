import { describe, expect, it } from "vitest";
import { formatOutboundScope, parseOutboundScope } from "../scope";
import { outboundKeyProblem, ZOutboundBudget } from "./outbound";

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
