import type { ReadDeps } from "../deps";

/** One scope's counts over one minute, as rolled up from the enforcers (`MetricMinute`). */
export interface MetricMinuteRecord {
  readonly scope: string;
  /** Start of the minute, epoch ms. */
  readonly minuteStartMs: number;
  readonly allowed: number;
  readonly rejected: number;
  readonly wouldReject: number;
  readonly degraded: number;
}

export interface ListMetricMinutesOptions {
  /** Inclusive: minutes starting at or after this instant (epoch ms). */
  readonly fromMs: number;
  /** Exclusive. */
  readonly toMs: number;
  /** Only these scopes. @default every scope */
  readonly scopes?: readonly string[];
  /**
   * Only this region's counts (REGIONS). @default every region's: a (scope, minute) then has a
   * row per region, which the chart math sums.
   */
  readonly region?: string;
}

/**
 * Every scope's (or the given scopes') per-minute counts in `[fromMs, toMs)`, oldest first, read on
 * the `minute` index.
 * A day is (scopes × 1440) rows: the chart and alert math sums them, so nothing is aggregated here.
 */
export async function listMetricMinutes(
  options: ListMetricMinutesOptions,
  deps: ReadDeps,
): Promise<MetricMinuteRecord[]> {
  if (!(Number.isFinite(options.fromMs) && Number.isFinite(options.toMs))) {
    throw new RangeError("fromMs and toMs must be finite epoch milliseconds");
  }
  const rows = await deps.db.metricMinute.findMany({
    where: {
      minute: { gte: new Date(options.fromMs), lt: new Date(options.toMs) },
      ...(options.scopes === undefined ? {} : { scope: { in: [...options.scopes] } }),
      ...(options.region === undefined ? {} : { region: options.region }),
    },
    orderBy: [{ minute: "asc" }, { scope: "asc" }],
    select: {
      scope: true,
      minute: true,
      allowed: true,
      rejected: true,
      wouldReject: true,
      degraded: true,
    },
  });
  return rows.map((row) => ({
    scope: row.scope,
    minuteStartMs: row.minute.getTime(),
    allowed: row.allowed,
    rejected: row.rejected,
    wouldReject: row.wouldReject,
    degraded: row.degraded,
  }));
}

/**
 * The start of the oldest stored minute at or after `sinceMs` (epoch ms), any scope or region;
 * null when there is none. One row read on the `minute` index.
 */
export async function findOldestMetricMinuteMs(
  options: { readonly sinceMs: number },
  deps: ReadDeps,
): Promise<number | null> {
  if (!Number.isFinite(options.sinceMs)) throw new RangeError("sinceMs must be finite epoch ms");
  const row = await deps.db.metricMinute.findFirst({
    where: { minute: { gte: new Date(options.sinceMs) } },
    orderBy: { minute: "asc" },
    select: { minute: true },
  });
  return row === null ? null : row.minute.getTime();
}
