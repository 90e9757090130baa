import { describe, expect, it } from "vitest";
import { buildStagedChart } from "./staged-chart";

const MINUTE_MS = 60_000;
const T0 = Date.UTC(2026, 11, 5, 12, 0, 0);

const base = {
  minutes: [],
  events: [],
  stepSlicesBasisPoints: [500, 2500, 10_000],
  createdAtMs: T0 + 20_000,
  endedAtMs: null,
  nowMs: T0 + 3 * MINUTE_MS + 5_000,
};

describe("buildStagedChart", () => {
  it("spans whole minutes from the start, at least ten, the current minute still counting", () => {
    const chart = buildStagedChart(base);
    expect(chart.startMs).toBe(T0);
    expect(chart.endMs).toBe(T0 + 10 * MINUTE_MS);
    expect(chart.bucketStartsMs).toHaveLength(10);
    expect(chart.partialBucketStartMs).toBe(T0 + 3 * MINUTE_MS);
  });

  it("ends at the minute it ended, with no minute still counting", () => {
    const chart = buildStagedChart({
      ...base,
      createdAtMs: T0,
      endedAtMs: T0 + 14 * MINUTE_MS + 1,
      nowMs: T0 + 30 * MINUTE_MS,
    });
    expect(chart.endMs).toBe(T0 + 15 * MINUTE_MS);
    expect(chart.partialBucketStartMs).toBeNull();
  });

  it("gives each side's rejection rate, and a gap where a side saw no request", () => {
    const chart = buildStagedChart({
      ...base,
      minutes: [
        {
          minuteStartMs: T0 + MINUTE_MS,
          sliceRequests: 10,
          sliceRejected: 6,
          restRequests: 0,
          restRejected: 0,
        },
      ],
    });
    expect(chart.rows[0]?.values).toEqual([null, null]);
    expect(chart.rows[1]?.values).toEqual([0.6, null]);
    expect(chart.rows[1]?.counts?.sliceRequests).toBe(10);
    expect(chart.rows[1]?.xMs).toBe(T0 + MINUTE_MS + MINUTE_MS / 2);
  });

  it("labels each step's start with its slice, and every other verb in words", () => {
    const chart = buildStagedChart({
      ...base,
      events: [
        { atMs: T0 + 2 * MINUTE_MS, auditEntryId: "3", action: "staged-change.advance" },
        { atMs: T0 + 20_000, auditEntryId: "1", action: "staged-change.start" },
        { atMs: T0 + MINUTE_MS, auditEntryId: "2", action: "staged-change.pause" },
        { atMs: T0 + 3 * MINUTE_MS, auditEntryId: "4", action: "staged-change.revert" },
      ],
    });
    expect(chart.markers.map((marker) => marker.label)).toEqual([
      "Step 1: 5 %",
      "Paused",
      "Step 2: 25 %",
      "Reverted by its guard",
    ]);
  });
});
