import type { TPolicyLimit } from "@limitplane/enforcer/policy";
import { describe, expect, it } from "vitest";
import { DEFAULT_STAGING, parseStagedSteps, stageOfEdit } from "./staged-steps-draft";

const bucket = (capacity: number, mode: "enforce" | "dry-run" = "enforce"): TPolicyLimit => ({
  algorithm: "token-bucket",
  capacity,
  refillPerSec: capacity / 2,
  mode,
  onStoreFailure: "local",
});

describe("parseStagedSteps", () => {
  it("takes the default 5, 25, 100 % of ten minutes each", () => {
    expect(parseStagedSteps({ ...DEFAULT_STAGING, isStaged: true })).toEqual({
      steps: [
        { percent: 5, dwellMs: 600_000 },
        { percent: 25, dwellMs: 600_000 },
        { percent: 100, dwellMs: 600_000 },
      ],
      errors: {},
    });
  });

  it.each([
    {
      name: "an empty percent",
      steps: [{ percent: "", dwellMinutes: "1" }],
      path: "steps[0].percent",
      message: "Give a percent, e.g. 25.",
    },
    {
      name: "a step that does not widen",
      steps: [
        { percent: "50", dwellMinutes: "1" },
        { percent: "40", dwellMinutes: "1" },
        { percent: "100", dwellMinutes: "1" },
      ],
      path: "steps[1].percent",
      message: "each step must widen the slice: 40 is not above 50",
    },
    {
      name: "a last step short of 100",
      steps: [{ percent: "50", dwellMinutes: "1" }],
      path: "steps[0].percent",
      message: "the last step must be 100: a staged change ends with everyone under the new limit",
    },
    {
      name: "a dwell under a second",
      steps: [{ percent: "100", dwellMinutes: "0.001" }],
      path: "steps[0].dwellMs",
      message: "dwellMs must be at least 1000 (1 s)",
    },
  ])("names the field for $name", ({ steps, path, message }) => {
    const result = parseStagedSteps({ isStaged: true, steps });
    expect(result.steps).toBeNull();
    expect(result.errors[path]).toBe(message);
  });
});

describe("stageOfEdit", () => {
  it("stages the one changed limit, without its mode and failure policy", () => {
    expect(
      stageOfEdit([
        { target: "tier:pro/endpoint:search", before: bucket(10), after: bucket(10) },
        { target: "ceiling/endpoint:search", before: bucket(100), after: bucket(50) },
      ]),
    ).toEqual({
      target: "ceiling/endpoint:search",
      limit: { algorithm: "token-bucket", capacity: 50, refillPerSec: 25 },
    });
  });

  it.each([
    { name: "no change", edits: [{ target: "tier:a", before: bucket(1), after: bucket(1) }] },
    {
      name: "two changes",
      edits: [
        { target: "ceiling", before: bucket(1), after: bucket(2) },
        { target: "address", before: bucket(1), after: bucket(2) },
      ],
    },
    { name: "a removal", edits: [{ target: "tier:a/endpoint:b", before: bucket(1), after: null }] },
    {
      name: "a mode change",
      edits: [{ target: "tier:a", before: bucket(1), after: bucket(2, "dry-run") }],
    },
  ])("says why $name cannot be staged", ({ edits }) => {
    expect(stageOfEdit(edits)).toHaveProperty("unavailable");
  });

  it("refuses an edit that changes more than limits", () => {
    expect(
      stageOfEdit([{ target: "ceiling", before: bucket(1), after: bucket(2) }], "the defaults"),
    ).toEqual({ unavailable: "it also changes the defaults; only a limit can be staged." });
  });
});
