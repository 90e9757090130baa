import { describe, expect, it } from "vitest";
import {
  draftOf,
  emptyDraft,
  limitInputOf,
  validateDraft,
  validateSpecDraft,
  withAlgorithm,
  withGlobal,
} from "./limit-draft";

const bucket = {
  algorithm: "token-bucket",
  capacity: 20,
  refillPerSec: 10,
  mode: "enforce",
  onStoreFailure: "open",
} as const;

describe("limit drafts", () => {
  it("a limit survives the round trip through the form", () => {
    expect(validateDraft(draftOf(bucket), ["limit"])).toEqual({ limit: bucket, errors: {} });
    const window = {
      algorithm: "fixed-window",
      limit: 10,
      windowMs: 900_000,
      mode: "dry-run",
      onStoreFailure: "closed",
    } as const;
    expect(draftOf(window).windowSec).toBe("900");
    expect(validateDraft(draftOf(window), ["limit"]).limit).toEqual(window);
  });

  it("a window typed in seconds is sent in milliseconds", () => {
    const draft = {
      ...emptyDraft("open"),
      algorithm: "sliding-window" as const,
      size: "100",
      windowSec: "1.5",
    };
    expect(limitInputOf(draft)).toMatchObject({ limit: 100, windowMs: 1500 });
  });

  it.each([
    [
      "an empty field is required, by the API's name",
      { size: "" },
      "limit.capacity",
      "capacity is required",
    ],
    ["zero is below the minimum", { size: "0" }, "limit.capacity", "capacity must be at least 1"],
    [
      "a fraction is not a count",
      { size: "2.5" },
      "limit.capacity",
      "capacity must be a whole number, not 2.5",
    ],
    [
      "text is not a rate",
      { ratePerSec: "fast" },
      "limit.refillPerSec",
      "refillPerSec must be a finite number",
    ],
  ])("%s", (_name, patch, path, message) => {
    const { limit, errors } = validateDraft({ ...draftOf(bucket), ...patch }, ["limit"]);
    expect(limit).toBeNull();
    expect(errors[path]).toContain(message);
  });

  it("errors are keyed by the path the API uses, tier names and all", () => {
    const { errors } = validateDraft({ ...draftOf(bucket), size: "0" }, ["limits", "e2e-tier"]);
    expect(Object.keys(errors)).toEqual(['limits["e2e-tier"].capacity']);
  });

  it("a candidate's limit has no mode or failure policy", () => {
    expect(validateSpecDraft(draftOf(bucket), ["limit"]).limit).toEqual({
      algorithm: "token-bucket",
      capacity: 20,
      refillPerSec: 10,
    });
  });

  it("a global limit survives the round trip; the box sends global: true or leaves it out", () => {
    const global = { ...bucket, global: true } as const;
    expect(validateDraft(draftOf(global), ["limit"])).toEqual({ limit: global, errors: {} });
    expect(validateDraft(withGlobal(draftOf(bucket), true), ["limit"]).limit).toEqual(global);
    const unmarked = withGlobal(draftOf(global), false);
    expect("global" in unmarked).toBe(false);
    expect(validateDraft(unmarked, ["limit"]).limit).toEqual(bucket);
    expect("global" in limitInputOf(unmarked)).toBe(false);
  });

  it("switching away from token-bucket clears global; switching back does not set it", () => {
    const marked = withGlobal(draftOf(bucket), true);
    const window = withAlgorithm(marked, "fixed-window");
    expect(window.algorithm).toBe("fixed-window");
    expect("global" in window).toBe(false);
    expect(validateDraft({ ...window, size: "10" }, ["limit"]).errors).toEqual({});
    expect("global" in withAlgorithm(window, "token-bucket")).toBe(false);
    expect(withAlgorithm(marked, "token-bucket").global).toBe(true);
  });

  it("a global draft on another algorithm is refused at its global field", () => {
    const { limit, errors } = validateDraft(
      { ...withGlobal(draftOf(bucket), true), algorithm: "leaky-meter" },
      ["tiers", 0, "limit"],
    );
    expect(limit).toBeNull();
    expect(errors).toEqual({
      "tiers[0].limit.global":
        "global applies only to token-bucket limits, not leaky-meter: a share of a window's count or a meter's level could be spent in two regions",
    });
  });

  it("a candidate's limit drops global", () => {
    expect(validateSpecDraft(withGlobal(draftOf(bucket), true), ["limit"]).limit).toEqual({
      algorithm: "token-bucket",
      capacity: 20,
      refillPerSec: 10,
    });
  });
});
