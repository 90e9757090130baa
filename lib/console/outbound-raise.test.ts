import { describe, expect, it } from "vitest";
import { describeRaiseBanner, describeRaiseChanges } from "./outbound-raise";

const NOW_MS = Date.UTC(2026, 11, 6, 9, 30);
const BASE = {
  limit: { algorithm: "token-bucket", capacity: 10, refillPerSec: 10 },
  concurrency: { max: 4 },
} as const;

describe("describeRaiseChanges", () => {
  it.each([
    [
      "the limit and the cap",
      { limit: { algorithm: "token-bucket", capacity: 30, refillPerSec: 30 }, concurrencyMax: 8 },
      ["Limit: 10/s, bursts of 10 → 30/s, bursts of 30", "In flight: at most 4 → at most 8"],
    ],
    ["the cap only", { limit: null, concurrencyMax: 2 }, ["In flight: at most 4 → at most 2"]],
    [
      "a limit of another algorithm",
      {
        limit: { algorithm: "fixed-window", limit: 1_000, windowMs: 60_000 },
        concurrencyMax: null,
      },
      ["Limit: 10/s, bursts of 10 → 1,000 per minute"],
    ],
  ] as const)("says base → raised for %s", (_label, raise, lines) => {
    expect(describeRaiseChanges(BASE, raise)).toEqual(lines);
  });
});

describe("describeRaiseBanner", () => {
  it.each([
    ["2026-12-06T14:05:00.000Z", "Raised until 14:05 UTC by Ada: quota day"],
    ["2026-12-07T01:00:00.000Z", "Raised until 2026-12-07 01:00 UTC by Ada: quota day"],
  ])("expiring at %s reads %j", (expiresAt, text) => {
    expect(describeRaiseBanner({ expiresAt, owner: "Ada", reason: "quota day" }, NOW_MS)).toBe(
      text,
    );
  });
});
