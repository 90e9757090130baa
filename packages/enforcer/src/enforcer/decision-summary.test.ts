import { describe, expect, it } from "vitest";
import { decisionSummary, formatDecisionSummary } from "./decision-summary";
import type { EnforcerDecision, EnforcerOutcome } from "./types";

function outcome(overrides: Partial<EnforcerOutcome>): EnforcerOutcome {
  return {
    allowed: true,
    limit: 20,
    remaining: 19,
    retryAfterMs: 0,
    resetAfterMs: 100,
    reason: null,
    scope: "tier:pro",
    mode: "enforce",
    fallback: null,
    ...overrides,
  };
}

describe("decisionSummary", () => {
  it("summarises a store rejection with every limit's part", () => {
    const rejecting = outcome({
      allowed: false,
      scope: "tier:pro/endpoint:reports",
      limit: 5,
      remaining: 0,
      retryAfterMs: 100,
      reason: "limit-exceeded",
    });
    const decision: EnforcerDecision = {
      allowed: false,
      limit: 5,
      remaining: 0,
      retryAfterMs: 100,
      resetAfterMs: 2000,
      reason: "limit-exceeded",
      scope: "tier:pro/endpoint:reports",
      outcomes: [
        outcome({ remaining: 3 }),
        rejecting,
        outcome({ scope: "candidate:c1", mode: "dry-run", allowed: false }),
      ],
      source: "store",
      degraded: false,
      failure: null,
    };
    const summary = decisionSummary(decision);
    expect(summary).toEqual({
      verdict: "reject",
      scope: "tier:pro/endpoint:reports",
      reason: "limit-exceeded",
      retryAfterMs: 100,
      source: "store",
      degraded: false,
      failure: null,
      limits: [
        "tier:pro ok 3/20",
        "tier:pro/endpoint:reports REJECT 0/5 100ms",
        "candidate:c1 dry-run would-reject",
      ],
    });
    expect(formatDecisionSummary(summary)).toBe(
      "reject tier:pro/endpoint:reports limit-exceeded retry=100ms via store | tier:pro ok 3/20; tier:pro/endpoint:reports REJECT 0/5 100ms; candidate:c1 dry-run would-reject",
    );
  });

  it("names the failure and each limit's fallback in a degraded decision", () => {
    const decision: EnforcerDecision = {
      allowed: true,
      limit: Number.MAX_SAFE_INTEGER,
      remaining: Number.MAX_SAFE_INTEGER,
      retryAfterMs: 0,
      resetAfterMs: 0,
      reason: null,
      scope: null,
      outcomes: [outcome({ remaining: 20, fallback: "open" })],
      source: "fallback",
      degraded: true,
      failure: "circuit-open",
    };
    expect(formatDecisionSummary(decisionSummary(decision))).toBe(
      "allow (unbound) via fallback after circuit-open | tier:pro ok 20/20 (open)",
    );
  });
});
