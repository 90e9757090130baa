/**
 * An outbound budget's charts as numbers (pure): per bucket of a chart window, calls, the wait
 * percentiles, waits ended by `maxWaitMs` or an abort, the peak of slots in flight and slots freed
 * by their TTL, from the rolled-up `OutboundMinute` rows.
 */
import { WAIT_BUCKET_COUNT, waitBucketUpperMs } from "@limitplane/enforcer/publication";
import type { ChartWindow } from "./chart-series";

/** The parts of a rolled-up minute the math reads (`OutboundMinuteRecord` fits). */
export interface OutboundMinuteRow {
  readonly minuteStartMs: number;
  readonly calls: number;
  readonly waitBuckets: readonly number[];
  readonly waitMaxed: number;
  readonly waitAborted: number;
  readonly peakInFlight: number;
  readonly ttlFreed: number;
}

/**
 * The `quantile` (0 to 1) of the waits counted in log2 `buckets`, as the upper bound of the
 * bucket holding that rank, in ms: at most twice the true wait (the bound of the last bucket is
 * Infinity). 0 for bucket 0 (waits under 1 ms, read as none); null when no wait was counted.
 */
export function waitPercentileMs(buckets: readonly number[], quantile: number): number | null {
  if (!(quantile > 0 && quantile <= 1)) {
    throw new RangeError(`quantile must be in (0, 1], not ${quantile}`);
  }
  let total = 0;
  for (const count of buckets) total += count ?? 0;
  if (total === 0) return null;
  // The smallest bucket whose cumulative count reaches the rank ceil(q * total).
  const rank = Math.ceil(quantile * total);
  let seen = 0;
  for (let index = 0; index < buckets.length; index++) {
    seen += buckets[index] ?? 0;
    if (seen >= rank) return index === 0 ? 0 : waitBucketUpperMs(index);
  }
  return null;
}

/** One bucket of the window; the null percentiles are a bucket without calls. */
export interface OutboundBucket {
  readonly startMs: number;
  readonly calls: number;
  readonly waitP50Ms: number | null;
  readonly waitP90Ms: number | null;
  readonly waitP99Ms: number | null;
  readonly waitMaxed: number;
  readonly waitAborted: number;
  readonly peakInFlight: number;
  readonly ttlFreed: number;
}

export interface OutboundSeries extends ChartWindow {
  readonly buckets: readonly OutboundBucket[];
  readonly totals: {
    readonly calls: number;
    readonly waitP50Ms: number | null;
    readonly waitP90Ms: number | null;
    readonly waitP99Ms: number | null;
    readonly waitMaxed: number;
    readonly waitAborted: number;
    readonly peakInFlight: number;
    readonly ttlFreed: number;
  };
  /** True when no row in the window counted anything: the panel shows its empty state. */
  readonly isEmpty: boolean;
}

function isUsable(row: OutboundMinuteRow): boolean {
  const counts = [
    row.calls,
    row.waitMaxed,
    row.waitAborted,
    row.peakInFlight,
    row.ttlFreed,
    ...row.waitBuckets,
  ];
  return Number.isFinite(row.minuteStartMs) && counts.every((n) => Number.isFinite(n) && n >= 0);
}

function addBuckets(into: number[], from: readonly number[]): void {
  from.forEach((count, index) => {
    into[index] = (into[index] ?? 0) + count;
  });
}

/**
 * The window's buckets from `rows` (one per minute and region; rows of a bucket are added up,
 * and their peaks give the larger). Rows outside the window, and rows with a count that is not
 * finite and from 0, are left out.
 */
export function buildOutboundSeries(
  rows: readonly OutboundMinuteRow[],
  window: ChartWindow,
): OutboundSeries {
  const sums = window.bucketStartsMs.map(() => ({
    calls: 0,
    waitBuckets: new Array<number>(WAIT_BUCKET_COUNT).fill(0),
    waitMaxed: 0,
    waitAborted: 0,
    peakInFlight: 0,
    ttlFreed: 0,
  }));
  const allWaits = new Array<number>(WAIT_BUCKET_COUNT).fill(0);
  let isEmpty = true;
  for (const row of rows) {
    if (!isUsable(row) || row.minuteStartMs < window.startMs || row.minuteStartMs >= window.endMs) {
      continue;
    }
    const sum = sums[Math.floor((row.minuteStartMs - window.startMs) / window.bucketMs)];
    if (sum === undefined) continue;
    sum.calls += row.calls;
    addBuckets(sum.waitBuckets, row.waitBuckets);
    addBuckets(allWaits, row.waitBuckets);
    sum.waitMaxed += row.waitMaxed;
    sum.waitAborted += row.waitAborted;
    sum.peakInFlight = Math.max(sum.peakInFlight, row.peakInFlight);
    sum.ttlFreed += row.ttlFreed;
    if (row.calls + row.waitMaxed + row.waitAborted + row.ttlFreed + row.peakInFlight > 0) {
      isEmpty = false;
    }
  }
  const buckets = sums.map((sum, index) => ({
    startMs: window.bucketStartsMs[index] ?? 0,
    calls: sum.calls,
    waitP50Ms: waitPercentileMs(sum.waitBuckets, 0.5),
    waitP90Ms: waitPercentileMs(sum.waitBuckets, 0.9),
    waitP99Ms: waitPercentileMs(sum.waitBuckets, 0.99),
    waitMaxed: sum.waitMaxed,
    waitAborted: sum.waitAborted,
    peakInFlight: sum.peakInFlight,
    ttlFreed: sum.ttlFreed,
  }));
  const total = (pick: (bucket: OutboundBucket) => number) =>
    buckets.reduce((sum, bucket) => sum + pick(bucket), 0);
  return {
    ...window,
    buckets,
    totals: {
      calls: total((bucket) => bucket.calls),
      waitP50Ms: waitPercentileMs(allWaits, 0.5),
      waitP90Ms: waitPercentileMs(allWaits, 0.9),
      waitP99Ms: waitPercentileMs(allWaits, 0.99),
      waitMaxed: total((bucket) => bucket.waitMaxed),
      waitAborted: total((bucket) => bucket.waitAborted),
      peakInFlight: Math.max(0, ...buckets.map((bucket) => bucket.peakInFlight)),
      ttlFreed: total((bucket) => bucket.ttlFreed),
    },
    isEmpty,
  };
}
