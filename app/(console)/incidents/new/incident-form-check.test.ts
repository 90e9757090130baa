import type { LimitSpec } from "@limitplane/enforcer/limiter";
import { describe, expect, it } from "vitest";
import {
  blockedMessage,
  checkIncidentDraft,
  type IncidentDraft,
  raiseBodyOf,
} from "./incident-form-check";

const NOW_MS = Date.parse("2025-06-02T10:00:00.000Z");
const HOUR_MS = 3_600_000;
const replacedLimit: LimitSpec = { algorithm: "token-bucket", capacity: 200, refillPerSec: 100 };
const context = {
  guardrails: { maxIncidentFactor: 10, maxIncidentDurationMs: 24 * HOUR_MS },
  replacedLimit,
  nowMs: NOW_MS,
};
const draft: IncidentDraft = {
  customerId: "acme",
  endpointClass: null,
  mode: "factor",
  factor: 3,
  limit: null,
  durationMs: 15 * 60_000,
  reason: "backfill after their outage",
  ticketUrl: "",
};
const check = (change: Partial<IncidentDraft>) =>
  checkIncidentDraft({ ...draft, ...change }, context);

describe("checkIncidentDraft: the form checks with the service's rules", () => {
  it("accepts a raise within the guardrails", () => {
    expect(check({})).toEqual({});
  });

  it("accepts durations from one second, as the service does (the form once required a minute)", () => {
    expect(check({ durationMs: 1_000 })).toEqual({});
    expect(check({ durationMs: 30_000 })).toEqual({});
    expect(check({ durationMs: 24 * HOUR_MS })).toEqual({});
  });

  it("refuses what the service refuses, with the service's words", () => {
    expect(check({ durationMs: 999 })).toEqual({
      duration: "durationMs must be at least 1000 (one second)",
    });
    expect(check({ durationMs: 1_500.5 })).toEqual({
      duration: "durationMs must be a whole number of milliseconds",
    });
    expect(check({ durationMs: 25 * HOUR_MS })).toEqual({
      duration:
        "the override would last 25 h; the maximum is 24 h (guardrails.maxIncidentDurationMs)",
    });
    expect(check({ factor: 50 })).toEqual({
      factor:
        "factor 50 would raise the limit 50x; the maximum raise is 10x (guardrails.maxIncidentFactor)",
    });
    expect(check({ factor: 0.05 })).toEqual({
      factor:
        "factor 0.05 would cut the limit to 1/20; the deepest cut is to 1/10, a factor of 0.1 (guardrails.maxIncidentFactor)",
    });
    expect(check({ factor: 0 })).toEqual({ factor: "factor must be more than 0" });
    expect(
      check({
        mode: "limit",
        limit: { algorithm: "token-bucket", capacity: 400, refillPerSec: 6_000 },
      }),
    ).toEqual({
      limit:
        "a sustained rate of 6000/s against 100/s in the limit it replaces would raise the limit 60x; the maximum raise is 10x (guardrails.maxIncidentFactor)",
    });
    expect(check({ ticketUrl: "ftp://tickets.example/1" })).toEqual({
      ticketUrl: "ticketUrl must be an http:// or https:// URL",
    });
  });

  it("checks the reason with ZReason: required, at most 1000 characters, one line", () => {
    expect(check({ reason: "   " })).toEqual({ reason: "reason must not be empty" });
    // A reason not yet given does not hide a guardrail.
    expect(check({ reason: "", factor: 50 })).toEqual({
      reason: "reason must not be empty",
      factor:
        "factor 50 would raise the limit 50x; the maximum raise is 10x (guardrails.maxIncidentFactor)",
    });
    expect(check({ reason: "x".repeat(1000) })).toEqual({});
    expect(check({ reason: "x".repeat(1001) })).toEqual({
      reason: "reason must be at most 1000 characters",
    });
    expect(check({ reason: "two\nlines" })).toEqual({
      reason:
        "reason must not contain control characters (line breaks, tabs) or bidirectional formatting characters",
    });
  });

  it("refuses a factor where there is no limit to scale", () => {
    expect(checkIncidentDraft(draft, { ...context, replacedLimit: null })).toEqual({
      factor:
        "there is no enforced limit here for a factor to scale; give an absolute limit instead",
    });
  });

  it("sends factor or limit, the trimmed reason, and a ticket link only when given", () => {
    expect(
      raiseBodyOf({ ...draft, reason: "  why  ", ticketUrl: " https://t.example/1 " }),
    ).toEqual({
      customerId: "acme",
      endpointClass: null,
      factor: 3,
      durationMs: 15 * 60_000,
      reason: "why",
      ticketUrl: "https://t.example/1",
    });
    expect(raiseBodyOf({ ...draft, mode: "limit", limit: replacedLimit })).toEqual({
      customerId: "acme",
      endpointClass: null,
      limit: replacedLimit,
      durationMs: 15 * 60_000,
      reason: "backfill after their outage",
    });
  });
});

describe("blockedMessage: what the form says while it cannot be sent", () => {
  it.each([
    ["nothing blocks", {}, [], null],
    [
      "an untouched form names the reason it still needs, never marked fields",
      { reason: "Say why" },
      [],
      "Fill in Reason to continue.",
    ],
    [
      "a marked field is pointed at",
      { reason: "Say why", factor: "too big" },
      ["factor"],
      "Fix the fields marked above to continue.",
    ],
  ] as const)("%s", (_label, hints, marked, message) => {
    expect(blockedMessage(hints, (field) => (marked as readonly string[]).includes(field))).toBe(
      message,
    );
  });
});
