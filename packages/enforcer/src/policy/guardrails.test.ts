import { describe, expect, it } from "vitest";
import { tokenBucket } from "../testing/policy-factory";
import { formatDuration } from "./format";
import { checkIncidentGuardrails, DEFAULT_GUARDRAILS, type IncidentChange } from "./guardrails";

const base: IncidentChange = {
  factor: 2,
  limit: null,
  startsAt: "2025-06-02T09:00:00.000Z",
  expiresAt: "2025-06-02T10:00:00.000Z",
};
const replacedLimit = tokenBucket(100, 10);
const options = { guardrails: DEFAULT_GUARDRAILS, replacedLimit };

describe("checkIncidentGuardrails", () => {
  it.each([
    ["a raise within the factor", { factor: 10 }],
    ["a cut to exactly a tenth", { factor: 0.1 }],
    [
      "an absolute limit within the factor both ways",
      { factor: null, limit: tokenBucket(1000, 1) },
    ],
    [
      "a window algorithm against a bucket",
      { factor: null, limit: { algorithm: "fixed-window" as const, limit: 300, windowMs: 60_000 } },
    ],
    ["exactly the maximum duration", { expiresAt: "2025-06-03T09:00:00.000Z" }],
  ])("passes %s", (_, change) => {
    expect(checkIncidentGuardrails({ ...base, ...change }, options)).toEqual([]);
  });

  it.each([
    [
      "a raise above the factor",
      { factor: 10.5 },
      ["factor"],
      "factor 10.5 would raise the limit 10.5x; the maximum raise is 10x",
    ],
    [
      "a cut below a tenth",
      { factor: 0.09 },
      ["factor"],
      "would cut the limit to 1/11.11; the deepest cut is to 1/10",
    ],
    [
      "a burst raised too far",
      { factor: null, limit: tokenBucket(1001, 10) },
      ["limit", "capacity"],
      "capacity 1001 against 100",
    ],
    [
      "a rate cut too far",
      { factor: null, limit: tokenBucket(100, 0.5) },
      ["limit", "refillPerSec"],
      "would cut the limit to 1/20",
    ],
    [
      "a window rate raised too far",
      { factor: null, limit: { algorithm: "sliding-window" as const, limit: 100, windowMs: 100 } },
      ["limit", "windowMs"],
      "a sustained rate of 1000/s against 10/s",
    ],
    [
      "a day and a minute",
      { expiresAt: "2025-06-03T09:01:00.000Z" },
      ["expiresAt"],
      "the override would last 24.02 h; the maximum is 24 h",
    ],
    [
      "an expiry at the start",
      { expiresAt: base.startsAt },
      ["expiresAt"],
      "expiresAt must be after startsAt",
    ],
  ])("refuses %s", (_, change, path, message) => {
    const errors = checkIncidentGuardrails({ ...base, ...change }, options);
    expect(errors).toEqual([{ path, message: expect.stringContaining(message) }]);
  });

  it("refuses an expiry already past only when checking a change made now", () => {
    const nowMs = Date.parse("2025-06-02T11:00:00.000Z");
    expect(checkIncidentGuardrails(base, options)).toEqual([]);
    expect(checkIncidentGuardrails(base, { ...options, nowMs })).toEqual([
      { path: ["expiresAt"], message: "expiresAt is already past; choose a future instant" },
    ]);
  });

  it("refuses a factor with nothing to scale, and lets an absolute limit add one", () => {
    expect(checkIncidentGuardrails(base, { ...options, replacedLimit: null })).toEqual([
      {
        path: ["factor"],
        message:
          "there is no enforced limit here for a factor to scale; give an absolute limit instead",
      },
    ]);
    expect(
      checkIncidentGuardrails(
        { ...base, factor: null, limit: tokenBucket(5, 1) },
        { ...options, replacedLimit: null },
      ),
    ).toEqual([]);
  });

  it("uses the configured guardrails", () => {
    const strict = { maxIncidentFactor: 2, maxIncidentDurationMs: 30 * 60_000 };
    const errors = checkIncidentGuardrails(
      { ...base, factor: 3 },
      { guardrails: strict, replacedLimit },
    );
    expect(errors.map((error) => error.message)).toEqual([
      "the override would last 1 h; the maximum is 30 min (guardrails.maxIncidentDurationMs)",
      "factor 3 would raise the limit 3x; the maximum raise is 2x (guardrails.maxIncidentFactor)",
    ]);
  });

  it("formats durations for people", () => {
    expect([
      formatDuration(45_000),
      formatDuration(90 * 60_000),
      formatDuration(48 * 3_600_000),
    ]).toEqual(["45 s", "1.5 h", "48 h"]);
  });
});
