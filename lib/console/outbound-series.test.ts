import { WAIT_BUCKET_COUNT, waitBucketOf } from "@limitplane/enforcer/publication";
import { describe, expect, it } from "vitest";
import { chartWindow } from "./chart-series";
import { buildOutboundSeries, type OutboundMinuteRow, waitPercentileMs } from "./outbound-series";

const MINUTE_MS = 60_000;
/** 12:07:30 UTC: the window's last complete minute starts at 12:06. */
const NOW_MS = Date.UTC(2025, 2, 4, 12, 7, 30);
const MINUTE_12_06 = Date.UTC(2025, 2, 4, 12, 6);

/** Log2 buckets holding the given waits, as a limiter counts them. */
function bucketsOf(waitsMs: readonly number[]): number[] {
  const buckets = new Array<number>(WAIT_BUCKET_COUNT).fill(0);
  for (const waitMs of waitsMs)
    buckets[waitBucketOf(waitMs)] = (buckets[waitBucketOf(waitMs)] ?? 0) + 1;
  return buckets;
}

function row(minuteStartMs: number, overrides: Partial<OutboundMinuteRow> = {}): OutboundMinuteRow {
  return {
    minuteStartMs,
    calls: 0,
    waitBuckets: bucketsOf([]),
    waitMaxed: 0,
    waitAborted: 0,
    peakInFlight: 0,
    ttlFreed: 0,
    ...overrides,
  };
}

describe("waitBucketOf", () => {
  it.each([
    [0, 0],
    [0.9, 0],
    [1, 1],
    [1.99, 1],
    [2, 2],
    [3, 2],
    [4, 3],
    [1_000, 10],
    [1_024, 11],
    [3_600_000, 22],
    [Number.POSITIVE_INFINITY, 22],
    [Number.NaN, 0],
  ])("a wait of %s ms falls in bucket %s", (waitMs, bucket) => {
    expect(waitBucketOf(waitMs)).toBe(bucket);
  });
});

describe("waitPercentileMs", () => {
  it.each([
    { name: "no waits counted reads as null", waits: [], quantile: 0.5, expected: null },
    { name: "waits under 1 ms read as 0", waits: [0, 0, 0.5], quantile: 0.99, expected: 0 },
    // 100 waits: 50 of 3 ms (bucket [2, 4)), 40 of 100 ms ([64, 128)), 10 of 1 000 ms ([512, 1024)).
    ...[
      { quantile: 0.5, expected: 4 },
      { quantile: 0.51, expected: 128 },
      { quantile: 0.9, expected: 128 },
      { quantile: 0.91, expected: 1_024 },
      { quantile: 0.99, expected: 1_024 },
      { quantile: 1, expected: 1_024 },
    ].map((entry) => ({
      name: `the ${entry.quantile} quantile of 50 x 3 ms, 40 x 100 ms and 10 x 1 s is the bound of its bucket`,
      waits: [
        ...Array<number>(50).fill(3),
        ...Array<number>(40).fill(100),
        ...Array<number>(10).fill(1_000),
      ],
      ...entry,
    })),
    { name: "one wait is every percentile", waits: [700], quantile: 0.5, expected: 1_024 },
    {
      name: "a wait past 2^21 ms reads as unbounded",
      waits: [5_000_000],
      quantile: 0.5,
      expected: Number.POSITIVE_INFINITY,
    },
  ])("$name", ({ waits, quantile, expected }) => {
    expect(waitPercentileMs(bucketsOf(waits), quantile)).toBe(expected);
  });

  it("is never below the true percentile and at most twice it", () => {
    const waits = Array.from({ length: 1_000 }, (_, index) => 1 + index * 7.3);
    const sorted = [...waits].sort((a, b) => a - b);
    for (const quantile of [0.5, 0.9, 0.99]) {
      const exact = sorted[Math.ceil(quantile * sorted.length) - 1] ?? 0;
      const estimate = waitPercentileMs(bucketsOf(waits), quantile) ?? 0;
      expect(estimate).toBeGreaterThan(exact);
      expect(estimate).toBeLessThanOrEqual(2 * exact);
    }
  });

  it("refuses a quantile outside (0, 1]", () => {
    expect(() => waitPercentileMs(bucketsOf([1]), 0)).toThrow("quantile must be in (0, 1], not 0");
    expect(() => waitPercentileMs(bucketsOf([1]), 1.5)).toThrow("not 1.5");
  });
});

describe("buildOutboundSeries", () => {
  const window = chartWindow({ rangeMs: 5 * MINUTE_MS, bucketMs: MINUTE_MS }, { nowMs: NOW_MS });

  it("adds the rows of a minute (one per region), and takes the larger peak", () => {
    const series = buildOutboundSeries(
      [
        row(MINUTE_12_06, {
          calls: 3,
          waitBuckets: bucketsOf([0, 3, 100]),
          waitMaxed: 1,
          peakInFlight: 4,
          ttlFreed: 2,
        }),
        row(MINUTE_12_06, {
          calls: 1,
          waitBuckets: bucketsOf([100]),
          waitAborted: 2,
          peakInFlight: 5,
        }),
      ],
      window,
    );
    expect(series.isEmpty).toBe(false);
    expect(series.buckets).toHaveLength(5);
    expect(series.buckets[4]).toEqual({
      startMs: MINUTE_12_06,
      calls: 4,
      waitP50Ms: 4,
      waitP90Ms: 128,
      waitP99Ms: 128,
      waitMaxed: 1,
      waitAborted: 2,
      peakInFlight: 5,
      ttlFreed: 2,
    });
    expect(series.buckets[0]).toMatchObject({ calls: 0, waitP50Ms: null, peakInFlight: 0 });
  });

  it("sums the window's totals, its percentiles over every wait and its peak as the largest", () => {
    const series = buildOutboundSeries(
      [
        row(MINUTE_12_06 - MINUTE_MS, {
          calls: 2,
          waitBuckets: bucketsOf([0, 0]),
          peakInFlight: 2,
        }),
        row(MINUTE_12_06, {
          calls: 2,
          waitBuckets: bucketsOf([600, 600]),
          ttlFreed: 3,
          peakInFlight: 1,
        }),
      ],
      window,
    );
    expect(series.totals).toEqual({
      calls: 4,
      waitP50Ms: 0,
      waitP90Ms: 1_024,
      waitP99Ms: 1_024,
      waitMaxed: 0,
      waitAborted: 0,
      peakInFlight: 2,
      ttlFreed: 3,
    });
  });

  it("is empty without rows, and leaves out rows outside the window or with bad counts", () => {
    expect(buildOutboundSeries([], window).isEmpty).toBe(true);
    const series = buildOutboundSeries(
      [
        row(window.endMs, { calls: 9 }),
        row(window.startMs - MINUTE_MS, { calls: 9 }),
        row(MINUTE_12_06, { calls: Number.NaN }),
        row(MINUTE_12_06, { ttlFreed: -1 }),
      ],
      window,
    );
    expect(series.isEmpty).toBe(true);
    expect(series.totals.calls).toBe(0);
  });
});
