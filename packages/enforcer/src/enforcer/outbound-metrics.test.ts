import { describe, expect, it } from "vitest";
import { ManualClock } from "../limiter/clock";
import { parseOutboundCounts, WAIT_BUCKET_COUNT } from "../publication/outbound-minutes";
import { parseScopeCounts } from "../publication/redis-keys";
import { OutboundMetrics } from "./outbound-metrics";

/** 10:00:00.000 UTC on a fixed day. */
const WALL_T0 = Date.UTC(2026, 0, 15, 10, 0, 0);
const MINUTE_T0 = WALL_T0 / 60_000;

function buckets(entries: Record<number, number>): number[] {
  const counts = new Array<number>(WAIT_BUCKET_COUNT).fill(0);
  for (const [index, count] of Object.entries(entries)) counts[Number(index)] = count;
  return counts;
}

describe("OutboundMetrics", () => {
  it("counts calls with their waits, ended waits, the peak and reaped slots in their minute", () => {
    const clock = new ManualClock(WALL_T0 + 59_999);
    const metrics = new OutboundMetrics({ wallClock: clock });
    metrics.recordCall("outbound:mail", 0);
    metrics.recordCall("outbound:mail", 3);
    metrics.recordSlots("outbound:mail", 2, 1);
    metrics.recordSlots("outbound:mail", 1, 0);
    metrics.recordWaitEnded("outbound:mail", "max-wait");
    clock.advance(1);
    metrics.recordWaitEnded("outbound:mail", "aborted");
    metrics.recordCall("outbound:crm", 1_000);
    expect(metrics.drain()).toEqual([
      {
        epochMinute: MINUTE_T0,
        scope: "outbound:mail",
        calls: 2,
        waitBuckets: buckets({ 0: 1, 2: 1 }),
        waitMaxed: 1,
        waitAborted: 0,
        peakInFlight: 2,
        ttlFreed: 1,
      },
      {
        epochMinute: MINUTE_T0 + 1,
        scope: "outbound:mail",
        calls: 0,
        waitBuckets: buckets({}),
        waitMaxed: 0,
        waitAborted: 1,
        peakInFlight: 0,
        ttlFreed: 0,
      },
      {
        epochMinute: MINUTE_T0 + 1,
        scope: "outbound:crm",
        calls: 1,
        waitBuckets: buckets({ 10: 1 }),
        waitMaxed: 0,
        waitAborted: 0,
        peakInFlight: 0,
        ttlFreed: 0,
      },
    ]);
  });

  it("a drain returns deltas: nothing twice", () => {
    const metrics = new OutboundMetrics({ wallClock: new ManualClock(WALL_T0) });
    metrics.recordCall("outbound:mail", 0);
    expect(metrics.drain()).toHaveLength(1);
    expect(metrics.drain()).toEqual([]);
    metrics.recordCall("outbound:mail", 0);
    expect(metrics.drain()).toMatchObject([{ calls: 1 }]);
  });

  it("a slot call that took nothing and reaped nothing counts nothing", () => {
    const metrics = new OutboundMetrics({ wallClock: new ManualClock(WALL_T0) });
    metrics.recordSlots("outbound:mail", 0, 0);
    expect(metrics.drain()).toEqual([]);
  });

  it("drops the oldest minute past maxPendingMinutes, and counts it", () => {
    const clock = new ManualClock(WALL_T0);
    const metrics = new OutboundMetrics({ wallClock: clock, maxPendingMinutes: 2 });
    for (let minute = 0; minute < 3; minute++) {
      metrics.recordCall("outbound:mail", 0);
      clock.advance(60_000);
    }
    expect(metrics.droppedMinuteCount).toBe(1);
    expect(metrics.drain().map((delta) => delta.epochMinute)).toEqual([
      MINUTE_T0 + 1,
      MINUTE_T0 + 2,
    ]);
  });
});

describe("the outbound fields of a minute hash", () => {
  const fields = {
    "outbound:mail|calls": "5",
    "outbound:mail|wait:0": "3",
    "outbound:mail|wait:4": "2",
    "outbound:mail|waitMaxed": "1",
    "outbound:mail|ttlFreed": "2",
    "outbound:mail|peakInFlight": "4",
    "outbound:mail|wait:99": "7",
    "outbound:mail|bogus": "7",
    "outbound:crm|waitAborted": "not a number",
    "tier:free|allowed": "9",
    "@latency|count": "9",
  };

  it("parse per budget, skipping unknown fields and bad values", () => {
    expect(parseOutboundCounts(fields)).toEqual([
      {
        scope: "outbound:crm",
        calls: 0,
        waitMaxed: 0,
        waitAborted: 0,
        ttlFreed: 0,
        peakInFlight: 0,
        waitBuckets: buckets({}),
      },
      {
        scope: "outbound:mail",
        calls: 5,
        waitMaxed: 1,
        waitAborted: 0,
        ttlFreed: 2,
        peakInFlight: 4,
        waitBuckets: buckets({ 0: 3, 4: 2 }),
      },
    ]);
  });

  it("are not read as per-scope counts", () => {
    expect(Object.fromEntries(parseScopeCounts(fields))).toEqual({
      "tier:free": { allowed: 9, rejected: 0, wouldReject: 0, degraded: 0 },
    });
  });
});
