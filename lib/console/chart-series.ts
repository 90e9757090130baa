/**
 * Chart math for the overview and dry-run pages, pure so it can be tested and run on the server:
 * per-scope rejection rate over time, blocked versus would-block for dry-run candidates, time-axis
 * ticks, and markers for policy changes and incident overrides.
 *
 * Zero traffic: a bucket in which a scope evaluated no requests has `rate: null` (and, in dry-run
 * series, `blocked`/`wouldBlock: null`), which a line chart draws as a gap. It is never 0% (nothing
 * was rejected because nothing arrived, which is not the same as a 0% rate) and never NaN.
 */
import {
  addRow,
  type CountTotals,
  compareCodeUnits,
  emptyTotals,
  groupByScope,
  MINUTE_MS,
  type ScopeMinuteCount,
} from "@/lib/control/metric-minute/minute-counts";

// ---------------------------------------------------------------------------------------------
// Ranges and windows

export type ChartRangeId = "15m" | "1h" | "1d";

export interface ChartRange {
  readonly id: ChartRangeId;
  readonly label: string;
  /** How far back the chart reaches. */
  readonly rangeMs: number;
  /** The chart's resolution: each point sums the minutes in one bucket. */
  readonly bucketMs: number;
}

/**
 * The overview's three ranges. Resolutions are whole minutes because the stored counts are per
 * minute: 15 points for 15 minutes, 60 for an hour, 96 (every 15 minutes) for a day.
 */
export const CHART_RANGES: Readonly<Record<ChartRangeId, ChartRange>> = {
  "15m": { id: "15m", label: "Last 15 minutes", rangeMs: 15 * MINUTE_MS, bucketMs: MINUTE_MS },
  "1h": { id: "1h", label: "Last hour", rangeMs: 60 * MINUTE_MS, bucketMs: MINUTE_MS },
  "1d": { id: "1d", label: "Last day", rangeMs: 24 * 60 * MINUTE_MS, bucketMs: 15 * MINUTE_MS },
};

/** For parsing a `?range=` search parameter. */
export function isChartRangeId(value: unknown): value is ChartRangeId {
  return value === "15m" || value === "1h" || value === "1d";
}

/**
 * The overview's range when the URL names none: the smallest whose chart (the minute still
 * counting included) reaches back to the oldest data, so 15 minutes of counts fill the chart
 * rather than its right quarter. `oldestDataMs`: the start of the oldest stored minute within the
 * longest range; null when there is none (the live minutes, if any, fit the smallest range).
 * Data older than the longest range is the longest range's.
 */
export function defaultChartRangeId(oldestDataMs: number | null, nowMs: number): ChartRangeId {
  const ranges = Object.values(CHART_RANGES).sort((a, b) => a.rangeMs - b.rangeMs);
  const smallest = ranges[0]?.id ?? "1h";
  if (oldestDataMs === null) return smallest;
  const fitting = ranges.find(
    (range) => chartWindow(range, { nowMs, includeCurrentBucket: true }).startMs <= oldestDataMs,
  );
  return fitting?.id ?? ranges[ranges.length - 1]?.id ?? "1d";
}

export interface ChartWindowOptions {
  /** The instant the chart is drawn at. */
  nowMs: number;
  /**
   * Whether the bucket containing `nowMs` is drawn. It is still filling (and its minutes may not
   * be rolled up yet), so by default the chart ends at the last complete bucket.
   * @default false
   */
  includeCurrentBucket?: boolean;
}

/** The time span a chart covers, cut into buckets aligned to multiples of `bucketMs`. */
export interface ChartWindow {
  /** Inclusive. */
  readonly startMs: number;
  /** Exclusive. */
  readonly endMs: number;
  readonly bucketMs: number;
  /** Start of each bucket, oldest first; `(endMs - startMs) / bucketMs` of them. */
  readonly bucketStartsMs: readonly number[];
  /**
   * Start of the last bucket when it is still filling (`includeCurrentBucket`), so a chart draws
   * it apart from the complete ones; `null` when every bucket is complete.
   */
  readonly partialBucketStartMs: number | null;
}

/**
 * The window a range covers at `nowMs`.
 * @throws RangeError when `nowMs` is not finite, or `rangeMs` is not a positive whole multiple of
 *   a positive `bucketMs`.
 */
export function chartWindow(
  range: Pick<ChartRange, "rangeMs" | "bucketMs">,
  options: ChartWindowOptions,
): ChartWindow {
  const { rangeMs, bucketMs } = range;
  if (!Number.isFinite(options.nowMs)) throw new RangeError("nowMs must be a finite number");
  if (!(Number.isInteger(bucketMs) && bucketMs > 0)) {
    throw new RangeError("bucketMs must be a positive whole number of milliseconds");
  }
  if (!(Number.isInteger(rangeMs) && rangeMs > 0 && rangeMs % bucketMs === 0)) {
    throw new RangeError("rangeMs must be a positive whole multiple of bucketMs");
  }
  const currentBucketStartMs = Math.floor(options.nowMs / bucketMs) * bucketMs;
  const endMs = options.includeCurrentBucket
    ? currentBucketStartMs + bucketMs
    : currentBucketStartMs;
  const startMs = endMs - rangeMs;
  const bucketStartsMs: number[] = [];
  for (let t = startMs; t < endMs; t += bucketMs) bucketStartsMs.push(t);
  const partialBucketStartMs = options.includeCurrentBucket ? currentBucketStartMs : null;
  return { startMs, endMs, bucketMs, bucketStartsMs, partialBucketStartMs };
}

/** The bucket a minute falls in, or -1 outside the window. */
function bucketIndex(window: ChartWindow, atMs: number): number {
  if (atMs < window.startMs || atMs >= window.endMs) return -1;
  return Math.floor((atMs - window.startMs) / window.bucketMs);
}

/** Per-bucket totals of one scope's rows. */
function bucketTotals(window: ChartWindow, rows: readonly ScopeMinuteCount[]): CountTotals[] {
  const totals = window.bucketStartsMs.map(() => emptyTotals());
  for (const row of rows) {
    const bucket = totals[bucketIndex(window, row.minuteStartMs)];
    if (bucket !== undefined) addRow(bucket, row);
  }
  return totals;
}

export interface TimeTickOptions {
  /**
   * Most ticks.
   * @default 6
   */
  maxTicks?: number;
  /**
   * The viewer's offset from UTC (`-new Date().getTimezoneOffset() * 60_000` in a browser), so
   * steps of hours fall on the viewer's round hours even in a zone offset by a half hour.
   * @default 0 (UTC)
   */
  utcOffsetMs?: number;
}

/**
 * Tick positions for a time axis: at most `maxTicks`, on round steps (1, 2, 5, 10, 15, 30
 * minutes; 1, 2, 3, 6, 12 hours; days) aligned to multiples of the step in the viewer's local
 * time, inside the window.
 */
export function timeTicks(window: ChartWindow, options: TimeTickOptions = {}): number[] {
  const maxTicks = options.maxTicks ?? 6;
  const offsetMs = Number.isFinite(options.utcOffsetMs) ? (options.utcOffsetMs ?? 0) : 0;
  const spanMs = window.endMs - window.startMs;
  if (!(spanMs > 0) || maxTicks < 1) return [];
  const stepsMs = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080].map(
    (minutes) => minutes * MINUTE_MS,
  );
  const stepMs =
    stepsMs.find((step) => Math.floor(spanMs / step) + 1 <= maxTicks) ??
    Math.ceil(spanMs / maxTicks / MINUTE_MS) * MINUTE_MS;
  const ticks: number[] = [];
  const firstLocalMs = Math.ceil((window.startMs + offsetMs) / stepMs) * stepMs;
  for (let t = firstLocalMs - offsetMs; t <= window.endMs; t += stepMs) ticks.push(t);
  return ticks.slice(0, maxTicks);
}

// ---------------------------------------------------------------------------------------------
// Rejection rate per scope

export interface RatePoint {
  readonly startMs: number;
  readonly endMs: number;
  /** Requests the scope evaluated in the bucket. */
  readonly requests: number;
  readonly rejected: number;
  /** `rejected / requests`, from 0 to 1; `null` when `requests` is 0 (a gap, not 0%). */
  readonly rate: number | null;
}

export interface ScopeRateSeries {
  readonly scope: string;
  /** One per bucket of the window, aligned with `bucketStartsMs`. */
  readonly points: readonly RatePoint[];
  readonly totalRequests: number;
  readonly totalRejected: number;
  /** Over the whole window; `null` with no requests. */
  readonly overallRate: number | null;
  /** The highest bucket rate and where it starts; `null` with no requests. */
  readonly peakRate: number | null;
  readonly peakAtMs: number | null;
}

export interface RejectionRateChartData extends ChartWindow {
  /** Most rejections first (then most requests, then scope). */
  readonly series: readonly ScopeRateSeries[];
  /** Scopes with traffic left out by `maxScopes`, in the same order. */
  readonly omittedScopes: readonly string[];
}

export interface RejectionRateSeriesOptions extends ChartWindowOptions {
  /**
   * Only these scopes, each drawn even without traffic (all gaps). Unset: every scope that had a
   * request in the window.
   */
  scopes?: readonly string[];
  /**
   * Most lines on one chart; more are unreadable. The scopes with the most rejections are kept
   * and the rest listed in `omittedScopes`.
   * @default 8
   */
  maxScopes?: number;
  /**
   * Whether dry-run scopes (`candidate:ID`, `dry-run/<scope>`) get lines. They never reject, so
   * their rate is always 0%; their would-rejects belong on the dry-run chart. Scopes named in
   * `scopes` are drawn regardless.
   * @default false
   */
  includeDryRunScopes?: boolean;
}

/** Scopes counted in dry-run: they never reject, they would-reject. */
export function isDryRunScope(scope: string): boolean {
  return scope.startsWith("candidate:") || scope.startsWith("dry-run/");
}

function rate(rejected: number, requests: number): number | null {
  return requests > 0 ? rejected / requests : null;
}

function rateSeries(
  scope: string,
  window: ChartWindow,
  rows: readonly ScopeMinuteCount[],
): ScopeRateSeries {
  let totalRequests = 0;
  let totalRejected = 0;
  let peakRate: number | null = null;
  let peakAtMs: number | null = null;
  const points = bucketTotals(window, rows).map((totals, index): RatePoint => {
    const startMs = window.bucketStartsMs[index] ?? window.startMs + index * window.bucketMs;
    const pointRate = rate(totals.rejected, totals.requests);
    totalRequests += totals.requests;
    totalRejected += totals.rejected;
    if (pointRate !== null && (peakRate === null || pointRate > peakRate)) {
      peakRate = pointRate;
      peakAtMs = startMs;
    }
    return {
      startMs,
      endMs: startMs + window.bucketMs,
      requests: totals.requests,
      rejected: totals.rejected,
      rate: pointRate,
    };
  });
  return {
    scope,
    points,
    totalRequests,
    totalRejected,
    overallRate: rate(totalRejected, totalRequests),
    peakRate,
    peakAtMs,
  };
}

/**
 * Each scope's rejection rate per bucket over a chart range, from per-minute counts. Unusable rows
 * (NaN or negative counts) are ignored; rows outside the window are ignored.
 */
export function buildRejectionRateSeries(
  rows: readonly ScopeMinuteCount[],
  range: Pick<ChartRange, "rangeMs" | "bucketMs">,
  options: RejectionRateSeriesOptions,
): RejectionRateChartData {
  const window = chartWindow(range, options);
  const maxScopes = Math.max(0, options.maxScopes ?? 8);
  const groups = groupByScope(rows);
  const scopes =
    options.scopes ??
    [...groups.keys()].filter((scope) => options.includeDryRunScopes || !isDryRunScope(scope));
  const all = [...new Set(scopes)]
    .map((scope) => rateSeries(scope, window, groups.get(scope) ?? []))
    .filter((series) => options.scopes !== undefined || series.totalRequests > 0)
    .sort(
      (a, b) =>
        b.totalRejected - a.totalRejected ||
        b.totalRequests - a.totalRequests ||
        compareCodeUnits(a.scope, b.scope),
    );
  return {
    ...window,
    series: all.slice(0, maxScopes),
    omittedScopes: all.slice(maxScopes).map((series) => series.scope),
  };
}

/** One row per bucket, as a chart library wants them. */
export interface ChartRow {
  /** The bucket's middle, where its point is drawn, so markers inside it sit beside it. */
  readonly xMs: number;
  readonly startMs: number;
  readonly endMs: number;
  /** One value per series, in series order; `null` draws a gap. */
  readonly values: readonly (number | null)[];
}

/** Narrows what a chart library hands back (typed loosely) to one of our rows. */
export function isChartRow(value: unknown): value is ChartRow {
  if (typeof value !== "object" || value === null) return false;
  return (
    "startMs" in value &&
    typeof value.startMs === "number" &&
    "endMs" in value &&
    typeof value.endMs === "number" &&
    "values" in value &&
    Array.isArray(value.values)
  );
}

/** Rates as chart rows: `values[i]` is `series[i]`'s rate in the bucket. */
export function toRateChartRows(data: RejectionRateChartData): ChartRow[] {
  return data.bucketStartsMs.map((startMs, index) => ({
    xMs: startMs + data.bucketMs / 2,
    startMs,
    endMs: startMs + data.bucketMs,
    values: data.series.map((series) => series.points[index]?.rate ?? null),
  }));
}

/**
 * Indexes of values with no value on either side: a line cannot be drawn through them, so a chart
 * marks them with a dot or they would not show at all.
 */
export function isolatedPointIndexes(values: readonly (number | null)[]): Set<number> {
  const isolated = new Set<number>();
  values.forEach((value, index) => {
    if (value === null) return;
    const before = index > 0 ? values[index - 1] : null;
    const after = index < values.length - 1 ? values[index + 1] : null;
    if ((before ?? null) === null && (after ?? null) === null) isolated.add(index);
  });
  return isolated;
}

/** True when no series has a single request in the window: show the empty state, not a chart. */
export function hasNoTraffic(data: {
  readonly series: readonly { totalRequests: number }[];
}): boolean {
  return data.series.every((series) => series.totalRequests === 0);
}

// ---------------------------------------------------------------------------------------------
// Dry-run: blocked versus would-block

/** An enforced scope and the dry-run scope that would replace it, for the same keys. */
export interface DryRunPair {
  /** Scope of the rule in force, e.g. `tier:free`. */
  readonly enforcedScope: string;
  /** Scope counted in dry-run, e.g. `candidate:stricter-free`. */
  readonly dryRunScope: string;
  /** What the chart calls the pair. @default "<dryRunScope> vs <enforcedScope>" */
  readonly label?: string;
}

export interface DryRunPoint {
  readonly startMs: number;
  readonly endMs: number;
  /** Requests the enforced scope rejected; `null` when it evaluated none (a gap). */
  readonly blocked: number | null;
  /** Requests the dry-run scope would have rejected; `null` when it evaluated none (a gap). */
  readonly wouldBlock: number | null;
  readonly enforcedRequests: number;
  readonly dryRunRequests: number;
}

export interface DryRunSeries {
  readonly label: string;
  readonly enforcedScope: string;
  readonly dryRunScope: string;
  readonly points: readonly DryRunPoint[];
  readonly totalBlocked: number;
  readonly totalWouldBlock: number;
  readonly enforcedRequests: number;
  readonly dryRunRequests: number;
  /** Rates over the window; `null` with no requests. */
  readonly blockedRate: number | null;
  readonly wouldBlockRate: number | null;
}

export interface DryRunChartData extends ChartWindow {
  /** In the order the pairs were given. */
  readonly series: readonly DryRunSeries[];
}

/**
 * Blocked (the enforced scope's rejections) against would-block (the dry-run scope's
 * would-rejects) per bucket, for each pair. Counts, not rates: "blocked 12, would block 340" is
 * what an operator weighs before promoting.
 */
export function buildDryRunSeries(
  rows: readonly ScopeMinuteCount[],
  range: Pick<ChartRange, "rangeMs" | "bucketMs">,
  options: ChartWindowOptions & { pairs: readonly DryRunPair[] },
): DryRunChartData {
  const window = chartWindow(range, options);
  const groups = groupByScope(rows);
  const series = options.pairs.map((pair): DryRunSeries => {
    const enforced = bucketTotals(window, groups.get(pair.enforcedScope) ?? []);
    const dryRun = bucketTotals(window, groups.get(pair.dryRunScope) ?? []);
    let totalBlocked = 0;
    let totalWouldBlock = 0;
    let enforcedRequests = 0;
    let dryRunRequests = 0;
    const points = window.bucketStartsMs.map((startMs, index): DryRunPoint => {
      const e = enforced[index] ?? emptyTotals();
      const d = dryRun[index] ?? emptyTotals();
      totalBlocked += e.rejected;
      totalWouldBlock += d.wouldReject;
      enforcedRequests += e.requests;
      dryRunRequests += d.requests;
      return {
        startMs,
        endMs: startMs + window.bucketMs,
        blocked: e.requests > 0 ? e.rejected : null,
        wouldBlock: d.requests > 0 ? d.wouldReject : null,
        enforcedRequests: e.requests,
        dryRunRequests: d.requests,
      };
    });
    return {
      label: pair.label ?? `${pair.dryRunScope} vs ${pair.enforcedScope}`,
      enforcedScope: pair.enforcedScope,
      dryRunScope: pair.dryRunScope,
      points,
      totalBlocked,
      totalWouldBlock,
      enforcedRequests,
      dryRunRequests,
      blockedRate: rate(totalBlocked, enforcedRequests),
      wouldBlockRate: rate(totalWouldBlock, dryRunRequests),
    };
  });
  return { ...window, series };
}

/** One dry-run pair as chart rows: `values` is `[blocked, wouldBlock]`. */
export function toDryRunChartRows(data: DryRunChartData, seriesIndex: number): ChartRow[] {
  const series = data.series[seriesIndex];
  return data.bucketStartsMs.map((startMs, index) => {
    const point = series?.points[index];
    return {
      xMs: startMs + data.bucketMs / 2,
      startMs,
      endMs: startMs + data.bucketMs,
      values: [point?.blocked ?? null, point?.wouldBlock ?? null],
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Markers: policy changes and incident overrides on the time axis

export type ChartMarkerKind = "policy-change" | "incident-override" | "redis-failover";

/** How each kind of marker is named: in a chart's list of markers, and in its short popover. */
export const MARKER_KIND_WORDS: Record<
  ChartMarkerKind,
  { readonly long: string; readonly short: string; readonly tone: "info" | "warn" | "bad" }
> = {
  "policy-change": { long: "policy change", short: "policy", tone: "info" },
  "incident-override": { long: "incident override", short: "incident", tone: "warn" },
  "redis-failover": { long: "Redis failover", short: "failover", tone: "bad" },
};

/** A change of Redis primary the enforcers recorded (`readRedisFailovers`). */
export interface FailoverMarkerInput {
  readonly atMs: number;
  readonly from: string;
  readonly to: string;
}

/**
 * Redis failovers inside the window as markers, linked to the status page's topology: so the
 * degraded decisions around one read as what they are.
 */
export function buildFailoverMarkers(
  failovers: readonly FailoverMarkerInput[],
  window: { readonly startMs: number; readonly endMs: number },
): ChartMarker[] {
  return failovers
    .filter((event) => event.atMs >= window.startMs && event.atMs < window.endMs)
    .map((event) => ({
      atMs: event.atMs,
      auditEntryId: `failover:${event.atMs}:${event.to}`,
      action: "redis.failover",
      kind: "redis-failover" as const,
      label: `Redis primary ${event.from} replaced by ${event.to}`,
      href: "/status#redis-topology",
    }));
}

/** An audit entry that belongs on the time axis. */
export interface ChartMarkerInput {
  readonly atMs: number;
  /** The audit entry's id (a decimal string for the database's bigint ids). */
  readonly auditEntryId: string;
  /** The audit action, a dotted literal: `tier.update`, `incident.raise`, ... */
  readonly action: string;
  /** What the marker says. @default the action */
  readonly label?: string;
}

export interface ChartMarker {
  readonly atMs: number;
  readonly auditEntryId: string;
  readonly action: string;
  readonly kind: ChartMarkerKind;
  readonly label: string;
  /** Where the marker links: the audit entry. */
  readonly href: string;
}

/** Incident actions (`incident.*`) are incident overrides; every other change is a policy change. */
export function markerKindForAction(action: string): ChartMarkerKind {
  return action.startsWith("incident.") ? "incident-override" : "policy-change";
}

/** The audit log opened at one entry. The id is URL-encoded, whatever it holds. */
export function auditEntryHref(auditEntryId: string): string {
  return `/audit?entry=${encodeURIComponent(auditEntryId)}`;
}

/**
 * The markers inside the window (`startMs <= atMs < endMs`), oldest first (then by id), each with
 * its kind and link. Entries with an unreadable time are left out.
 */
export function buildChartMarkers(
  entries: readonly ChartMarkerInput[],
  window: Pick<ChartWindow, "startMs" | "endMs">,
): ChartMarker[] {
  return entries
    .filter(
      (entry) =>
        Number.isFinite(entry.atMs) && entry.atMs >= window.startMs && entry.atMs < window.endMs,
    )
    .map((entry) => ({
      atMs: entry.atMs,
      auditEntryId: entry.auditEntryId,
      action: entry.action,
      kind: markerKindForAction(entry.action),
      label: entry.label ?? entry.action,
      href: auditEntryHref(entry.auditEntryId),
    }))
    .sort((a, b) => a.atMs - b.atMs || compareCodeUnits(a.auditEntryId, b.auditEntryId));
}
