import { describe, expect, it } from "vitest";
import { MINUTE_MS, type ScopeMinuteCount } from "@/lib/control/metric-minute/minute-counts";
import {
  auditEntryHref,
  buildChartMarkers,
  buildDryRunSeries,
  buildRejectionRateSeries,
  CHART_RANGES,
  chartWindow,
  defaultChartRangeId,
  hasNoTraffic,
  isChartRangeId,
  isChartRow,
  isDryRunScope,
  isolatedPointIndexes,
  markerKindForAction,
  timeTicks,
  toDryRunChartRows,
  toRateChartRows,
} from "./chart-series";

const HOUR_MS = 60 * MINUTE_MS;
/** 12:07:30 UTC. */
const NOW_MS = Date.UTC(2025, 2, 4, 12, 7, 30);
const MINUTE_12_07 = Date.UTC(2025, 2, 4, 12, 7);

function row(
  scope: string,
  minuteStartMs: number,
  allowed: number,
  rejected: number,
  wouldReject?: number,
): ScopeMinuteCount {
  return wouldReject === undefined
    ? { scope, minuteStartMs, allowed, rejected }
    : { scope, minuteStartMs, allowed, rejected, wouldReject };
}

describe("chart ranges and windows", () => {
  it("has the overview's three ranges with whole-minute resolutions", () => {
    expect(Object.values(CHART_RANGES).map((r) => [r.id, r.rangeMs / r.bucketMs])).toEqual([
      ["15m", 15],
      ["1h", 60],
      ["1d", 96],
    ]);
    expect(isChartRangeId("1h")).toBe(true);
    expect(isChartRangeId("2h")).toBe(false);
    expect(isChartRangeId(undefined)).toBe(false);
  });

  it("ends at the last complete bucket by default", () => {
    const window = chartWindow(CHART_RANGES["15m"], { nowMs: NOW_MS });
    expect(window.endMs).toBe(MINUTE_12_07);
    expect(window.startMs).toBe(MINUTE_12_07 - 15 * MINUTE_MS);
    expect(window.bucketStartsMs).toHaveLength(15);
    expect(window.bucketStartsMs[0]).toBe(window.startMs);
  });

  it("can include the bucket still filling", () => {
    const window = chartWindow(CHART_RANGES["15m"], { nowMs: NOW_MS, includeCurrentBucket: true });
    expect(window.endMs).toBe(MINUTE_12_07 + MINUTE_MS);
  });

  it("aligns day buckets to quarter hours", () => {
    const window = chartWindow(CHART_RANGES["1d"], { nowMs: NOW_MS });
    expect(window.endMs).toBe(Date.UTC(2025, 2, 4, 12, 0));
    expect(window.bucketStartsMs).toHaveLength(96);
  });

  it.each([
    [{ rangeMs: 10, bucketMs: 3 }, "rangeMs"],
    [{ rangeMs: 10, bucketMs: 0 }, "bucketMs"],
    [{ rangeMs: -60, bucketMs: 60 }, "rangeMs"],
  ])("refuses a range that does not cut into buckets: %o", (range, name) => {
    expect(() => chartWindow(range, { nowMs: NOW_MS })).toThrow(name);
  });

  it("puts time ticks on round steps inside the window", () => {
    const window = chartWindow(CHART_RANGES["1h"], { nowMs: NOW_MS });
    const ticks = timeTicks(window);
    expect(ticks.length).toBeLessThanOrEqual(6);
    expect(ticks.every((t) => t % (15 * MINUTE_MS) === 0)).toBe(true);
    expect(ticks.every((t) => t >= window.startMs && t <= window.endMs)).toBe(true);
    expect(timeTicks(chartWindow(CHART_RANGES["1d"], { nowMs: NOW_MS }), { maxTicks: 5 })).toEqual(
      [0, 6, 12, 18, 24].map((h) => Date.UTC(2025, 2, 3, 12) + h * HOUR_MS),
    );
  });

  it("puts ticks on the viewer's round hours, even half an hour off UTC", () => {
    const window = chartWindow(CHART_RANGES["1d"], { nowMs: NOW_MS });
    const utcOffsetMs = 5.5 * HOUR_MS; // India
    const ticks = timeTicks(window, { maxTicks: 5, utcOffsetMs });
    expect(ticks.every((t) => (t + utcOffsetMs) % (6 * HOUR_MS) === 0)).toBe(true);
    expect(ticks.every((t) => t >= window.startMs && t <= window.endMs)).toBe(true);
    expect(timeTicks(window, { utcOffsetMs: Number.NaN })).toEqual(timeTicks(window));
    expect(timeTicks(window, { maxTicks: 0 })).toEqual([]);
  });
});

describe("the overview's range when the URL names none", () => {
  // NOW_MS is 12:07:30: the 15-minute chart, the minute still counting included, starts at 11:53.
  const cases: [string, number | null, string][] = [
    ["no stored minute at all: the smallest", null, "15m"],
    ["data from this minute only", MINUTE_12_07, "15m"],
    ["15 minutes of data exactly fill the 15-minute chart", Date.UTC(2025, 2, 4, 11, 53), "15m"],
    ["a minute more than that needs the hour", Date.UTC(2025, 2, 4, 11, 52), "1h"],
    ["an hour of data fills the hour", Date.UTC(2025, 2, 4, 11, 8), "1h"],
    ["61 minutes need the day", Date.UTC(2025, 2, 4, 11, 7), "1d"],
    ["older than a day: the longest range", NOW_MS - 3 * 24 * HOUR_MS, "1d"],
  ];
  it.each(cases)("%s", (_what, oldestDataMs, expected) => {
    expect(defaultChartRangeId(oldestDataMs, NOW_MS)).toBe(expected);
  });

  it("the chosen range's chart shows the oldest minute", () => {
    for (const minutesAgo of [0, 5, 14, 15, 30, 59, 60, 61, 600, 1400]) {
      const oldestMs = MINUTE_12_07 - minutesAgo * MINUTE_MS;
      const id = defaultChartRangeId(oldestMs, NOW_MS);
      const window = chartWindow(CHART_RANGES[id], { nowMs: NOW_MS, includeCurrentBucket: true });
      expect(window.startMs, `${minutesAgo} min ago -> ${id}`).toBeLessThanOrEqual(oldestMs);
    }
  });
});

describe("rejection rate per scope", () => {
  const range = CHART_RANGES["15m"];
  const last = MINUTE_12_07 - MINUTE_MS;

  it("gives each bucket rejected / requests", () => {
    const data = buildRejectionRateSeries(
      [row("tier:free", last, 75, 25), row("tier:free", last - MINUTE_MS, 100, 0)],
      range,
      { nowMs: NOW_MS },
    );
    const series = data.series[0];
    expect(series?.points.at(-1)).toEqual({
      startMs: last,
      endMs: MINUTE_12_07,
      requests: 100,
      rejected: 25,
      rate: 0.25,
    });
    expect(series?.points.at(-2)?.rate).toBe(0);
    expect(series).toMatchObject({
      totalRequests: 200,
      totalRejected: 25,
      overallRate: 0.125,
      peakRate: 0.25,
      peakAtMs: last,
    });
  });

  it("zero traffic is a gap (null), never 0% and never NaN", () => {
    const data = buildRejectionRateSeries([row("tier:free", last, 10, 0)], range, {
      nowMs: NOW_MS,
    });
    const rates = data.series[0]?.points.map((p) => p.rate) ?? [];
    expect(rates.slice(0, -1).every((r) => r === null)).toBe(true);
    expect(rates.at(-1)).toBe(0);
    expect(rates.some((r) => Number.isNaN(r))).toBe(false);
  });

  it("a bucket of zero-count rows is still a gap", () => {
    const data = buildRejectionRateSeries([row("tier:free", last, 0, 0)], range, {
      nowMs: NOW_MS,
      scopes: ["tier:free"],
    });
    expect(data.series[0]?.points.at(-1)?.rate).toBeNull();
    expect(data.series[0]).toMatchObject({ overallRate: null, peakRate: null, peakAtMs: null });
    expect(hasNoTraffic(data)).toBe(true);
  });

  it("sums the minutes of a coarser bucket", () => {
    const quarter = Date.UTC(2025, 2, 4, 11, 45);
    const data = buildRejectionRateSeries(
      [
        row("tier:free", quarter, 90, 10),
        row("tier:free", quarter + 5 * MINUTE_MS, 50, 50),
        row("tier:free", quarter + 14 * MINUTE_MS, 0, 0),
      ],
      CHART_RANGES["1d"],
      { nowMs: NOW_MS },
    );
    expect(data.series[0]?.points.at(-1)).toMatchObject({ requests: 200, rejected: 60, rate: 0.3 });
  });

  it("counts would-reject requests as evaluated, not as rejected", () => {
    const data = buildRejectionRateSeries([row("candidate:c1", last, 80, 0, 20)], range, {
      nowMs: NOW_MS,
      includeDryRunScopes: true,
    });
    expect(data.series[0]?.points.at(-1)).toMatchObject({ requests: 100, rejected: 0, rate: 0 });
  });

  it("leaves out rows outside the window, the current minute, and unusable rows", () => {
    const data = buildRejectionRateSeries(
      [
        row("tier:free", MINUTE_12_07, 0, 1000),
        row("tier:free", MINUTE_12_07 - 16 * MINUTE_MS, 0, 1000),
        row("tier:free", last, Number.NaN, 5),
        row("tier:free", last, 10, -1),
        row("tier:free", last, 9, 1),
      ],
      range,
      { nowMs: NOW_MS },
    );
    expect(data.series[0]).toMatchObject({ totalRequests: 10, totalRejected: 1 });
  });

  it("orders scopes by rejections, keeps at most maxScopes and names the rest", () => {
    const rows = ["a", "b", "c", "d"].flatMap((name, i) => [
      row(`tier:${name}`, last, 100, i * 10),
    ]);
    rows.push(row("tier:idle", last - 20 * MINUTE_MS, 5, 5));
    const data = buildRejectionRateSeries(rows, range, { nowMs: NOW_MS, maxScopes: 2 });
    expect(data.series.map((s) => s.scope)).toEqual(["tier:d", "tier:c"]);
    expect(data.omittedScopes).toEqual(["tier:b", "tier:a"]);
  });

  it("leaves dry-run scopes out unless asked: they never reject", () => {
    const rows = [
      row("tier:a", last, 9, 1),
      row("candidate:c1", last, 5, 0, 5),
      row("dry-run/tier:a", last, 5, 0, 5),
    ];
    expect(
      buildRejectionRateSeries(rows, range, { nowMs: NOW_MS }).series.map((s) => s.scope),
    ).toEqual(["tier:a"]);
    expect(
      buildRejectionRateSeries(rows, range, { nowMs: NOW_MS, includeDryRunScopes: true }).series,
    ).toHaveLength(3);
    expect(
      buildRejectionRateSeries(rows, range, { nowMs: NOW_MS, scopes: ["candidate:c1"] }).series,
    ).toHaveLength(1);
    expect(isDryRunScope("candidate:x")).toBe(true);
    expect(isDryRunScope("customer:candidate:x")).toBe(false);
  });

  it("finds the points a line cannot reach", () => {
    expect([...isolatedPointIndexes([0.1, null, 0.2, 0.3, null, 0.4])]).toEqual([0, 5]);
    expect([...isolatedPointIndexes([0.5])]).toEqual([0]);
    expect([...isolatedPointIndexes([null, 0, null])]).toEqual([1]);
    expect([...isolatedPointIndexes([])]).toEqual([]);
  });

  it("draws requested scopes even without traffic, and only them", () => {
    const data = buildRejectionRateSeries([row("tier:a", last, 1, 1)], range, {
      nowMs: NOW_MS,
      scopes: ["tier:quiet", "tier:a", "tier:a"],
    });
    expect(data.series.map((s) => s.scope)).toEqual(["tier:a", "tier:quiet"]);
    expect(hasNoTraffic(data)).toBe(false);
  });

  it("with no rows at all there is nothing to draw", () => {
    const data = buildRejectionRateSeries([], range, { nowMs: NOW_MS });
    expect(data.series).toEqual([]);
    expect(hasNoTraffic(data)).toBe(true);
    expect(toRateChartRows(data)).toHaveLength(15);
  });

  it("turns series into chart rows drawn at each bucket's middle", () => {
    const data = buildRejectionRateSeries(
      [row("tier:a", last, 1, 1), row("tier:b", last, 3, 1)],
      range,
      { nowMs: NOW_MS },
    );
    const rows = toRateChartRows(data);
    expect(rows.at(-1)).toEqual({
      xMs: last + MINUTE_MS / 2,
      startMs: last,
      endMs: MINUTE_12_07,
      // Equal rejections: the busier scope first.
      values: [0.25, 0.5],
    });
    expect(rows[0]?.values).toEqual([null, null]);
    expect(isChartRow(rows[0])).toBe(true);
    expect(isChartRow({ startMs: 1, endMs: "2", values: [] })).toBe(false);
    expect(isChartRow(null)).toBe(false);
  });
});

describe("dry-run: blocked versus would-block", () => {
  const range = CHART_RANGES["15m"];
  const last = MINUTE_12_07 - MINUTE_MS;
  const pair = { enforcedScope: "tier:free", dryRunScope: "candidate:stricter" };

  it("sets the enforced scope's rejections against the candidate's would-rejects", () => {
    const data = buildDryRunSeries(
      [
        row("tier:free", last, 95, 5),
        row("candidate:stricter", last, 60, 0, 40),
        row("candidate:stricter", last - MINUTE_MS, 100, 0, 0),
      ],
      range,
      { nowMs: NOW_MS, pairs: [pair] },
    );
    const series = data.series[0];
    expect(series).toMatchObject({
      label: "candidate:stricter vs tier:free",
      totalBlocked: 5,
      totalWouldBlock: 40,
      enforcedRequests: 100,
      dryRunRequests: 200,
      blockedRate: 0.05,
      wouldBlockRate: 0.2,
    });
    expect(series?.points.at(-1)).toMatchObject({ blocked: 5, wouldBlock: 40 });
    // The enforced scope saw nothing that minute: a gap; the candidate saw traffic and would block 0.
    expect(series?.points.at(-2)).toMatchObject({ blocked: null, wouldBlock: 0 });
    expect(toDryRunChartRows(data, 0).at(-1)?.values).toEqual([5, 40]);
  });

  it("zero traffic on both sides is a gap on both lines, and null rates", () => {
    const data = buildDryRunSeries([], range, {
      nowMs: NOW_MS,
      pairs: [{ ...pair, label: "Stricter free tier" }],
    });
    const series = data.series[0];
    expect(series?.label).toBe("Stricter free tier");
    expect(series?.points.every((p) => p.blocked === null && p.wouldBlock === null)).toBe(true);
    expect(series).toMatchObject({ blockedRate: null, wouldBlockRate: null });
    expect(hasNoTraffic({ series: [{ totalRequests: 0 }] })).toBe(true);
    expect(toDryRunChartRows(data, 5)[0]?.values).toEqual([null, null]);
  });
});

describe("markers", () => {
  const window = chartWindow(CHART_RANGES["1h"], { nowMs: NOW_MS });

  it("keeps entries inside the window, oldest first, each linking to its audit entry", () => {
    const markers = buildChartMarkers(
      [
        { atMs: window.endMs - MINUTE_MS, auditEntryId: "42", action: "incident.raise" },
        {
          atMs: window.startMs,
          auditEntryId: "7",
          action: "tier.update",
          label: "free tier raised",
        },
        { atMs: window.startMs - 1, auditEntryId: "6", action: "tier.update" },
        { atMs: window.endMs, auditEntryId: "99", action: "tier.update" },
        { atMs: Number.NaN, auditEntryId: "100", action: "tier.update" },
      ],
      window,
    );
    expect(markers).toEqual([
      {
        atMs: window.startMs,
        auditEntryId: "7",
        action: "tier.update",
        kind: "policy-change",
        label: "free tier raised",
        href: "/audit?entry=7",
      },
      {
        atMs: window.endMs - MINUTE_MS,
        auditEntryId: "42",
        action: "incident.raise",
        kind: "incident-override",
        label: "incident.raise",
        href: "/audit?entry=42",
      },
    ]);
  });

  it("orders markers at the same instant by id", () => {
    const at = window.startMs + MINUTE_MS;
    const ids = buildChartMarkers(
      [
        { atMs: at, auditEntryId: "b", action: "x.y" },
        { atMs: at, auditEntryId: "a", action: "x.y" },
      ],
      window,
    ).map((m) => m.auditEntryId);
    expect(ids).toEqual(["a", "b"]);
  });

  it("classifies actions and encodes ids into links", () => {
    expect(markerKindForAction("incident.extend")).toBe("incident-override");
    expect(markerKindForAction("customer-override.create")).toBe("policy-change");
    expect(auditEntryHref('1&x=<script>"')).toBe("/audit?entry=1%26x%3D%3Cscript%3E%22");
  });
});

describe("the partial current bucket", () => {
  it("is named when the current bucket is drawn, and only then", () => {
    const now = Date.UTC(2025, 2, 4, 12, 7, 30);
    const withCurrent = chartWindow(CHART_RANGES["15m"], {
      nowMs: now,
      includeCurrentBucket: true,
    });
    expect(withCurrent.partialBucketStartMs).toBe(Date.UTC(2025, 2, 4, 12, 7));
    expect(withCurrent.bucketStartsMs.at(-1)).toBe(withCurrent.partialBucketStartMs);
    expect(chartWindow(CHART_RANGES["15m"], { nowMs: now }).partialBucketStartMs).toBeNull();
    const day = chartWindow(CHART_RANGES["1d"], { nowMs: now, includeCurrentBucket: true });
    expect(day.partialBucketStartMs).toBe(Date.UTC(2025, 2, 4, 12, 0));
  });
});
