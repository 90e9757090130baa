import { describe, expect, it } from "vitest";
import { DecisionMetrics } from "../enforcer/decision-metrics";
import { bucketFields } from "../enforcer/reporters";
import { ManualClock } from "../limiter/clock";
import { enforcerRedisNames, parseDecisionCounts, parseScopeCounts } from "./redis-keys";

describe("metrics bucket fields", () => {
  it("a drained bucket becomes HINCRBY deltas that read back as the same per-scope counts", () => {
    const metrics = new DecisionMetrics({ wallClock: new ManualClock(1_700_000_000_250) });
    const outcome = (scope: string, mode: "enforce" | "dry-run", allowed: boolean) => ({
      scope,
      mode,
      allowed,
      fallback: null,
    });
    metrics.record(
      {
        allowed: true,
        outcomes: [outcome("tier:free", "enforce", true), outcome("candidate:c", "dry-run", false)],
      },
      800,
    );
    metrics.record(
      {
        allowed: false,
        outcomes: [outcome("tier:free", "enforce", false)],
        source: "store",
      },
      30,
    );
    const [bucket] = metrics.drain();
    if (bucket === undefined) throw new Error("no bucket");
    const fields = bucketFields(bucket);
    expect(Object.fromEntries(fields)).toEqual({
      "tier:free|allowed": 1,
      "tier:free|rejected": 1,
      "candidate:c|wouldReject": 1,
      "@latency|le=50": 1,
      "@latency|le=1000": 1,
      "@latency|sumMicros": 830,
      "@latency|count": 2,
      "@source|store": 2,
    });
    const asRedisHash = Object.fromEntries(
      [...fields].map(([field, value]) => [field, String(value)]),
    );
    expect(Object.fromEntries(parseScopeCounts(asRedisHash))).toEqual({
      "tier:free": { allowed: 1, rejected: 1, wouldReject: 0, degraded: 0 },
      "candidate:c": { allowed: 0, rejected: 0, wouldReject: 1, degraded: 0 },
    });
  });

  it("keys per second and per minute of the wall clock, under the prefix", () => {
    const names = enforcerRedisNames("lp:");
    expect(names.metricsSecond(Math.floor(1_700_000_000_250 / 1000))).toBe(
      "lp:metrics:sec:1700000000",
    );
    expect(names.metricsMinute(Math.floor(1_700_000_000_250 / 60_000))).toBe(
      "lp:metrics:min:28333333",
    );
    expect(names.enforcer("gw-1")).toBe("lp:enforcer:gw-1");
    expect(names.rejections("org:umbrella")).toBe("lp:rejections:org:umbrella");
  });
});

describe("parseDecisionCounts", () => {
  it("sums the decisions by source and reads those made without Redis by reason", () => {
    expect(
      parseDecisionCounts({
        "@source|store": "90",
        "@source|fallback": "7",
        "@source|denial-cache": "3",
        "@failure|store-error": "4",
        "@failure|timeout": "2",
        "@failure|circuit-open": "1",
        "tier:pro|allowed": "50",
      }),
    ).toEqual({ decisions: 100, withoutStore: { storeError: 4, timeout: 2, circuitOpen: 1 } });
  });

  it("reads a malformed or hostile count as 0, never NaN or a negative", () => {
    expect(
      parseDecisionCounts({
        "@source|store": "lots",
        "@source|fallback": "-5",
        "@source|flood-guard": "1e400",
        "@failure|timeout": "NaN",
        "@failure|store-error": "3.5",
      }),
    ).toEqual({ decisions: 0, withoutStore: { storeError: 0, timeout: 0, circuitOpen: 0 } });
    expect(parseDecisionCounts({})).toEqual({
      decisions: 0,
      withoutStore: { storeError: 0, timeout: 0, circuitOpen: 0 },
    });
  });
});
