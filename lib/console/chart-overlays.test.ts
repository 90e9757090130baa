import { describe, expect, it } from "vitest";
import {
  groupChartMarkers,
  partialBucketIndex,
  plotFraction,
  splitAtPartialBucket,
} from "./chart-overlays";
import { buildChartMarkers, CHART_RANGES, chartWindow } from "./chart-series";

const MINUTE_MS = 60_000;
const NOW_MS = Date.UTC(2025, 2, 4, 12, 0, 30);
const hour = chartWindow(CHART_RANGES["1h"], { nowMs: NOW_MS });

/** Markers at these minutes before the window's end. */
function markersAt(minutesAgo: readonly number[], action = "tier.update") {
  return buildChartMarkers(
    minutesAgo.map((ago, index) => ({
      atMs: hour.endMs - ago * MINUTE_MS,
      auditEntryId: String(index + 1),
      action: index === 1 ? "incident.raise" : action,
    })),
    hour,
  );
}

describe("groupChartMarkers", () => {
  // The review's case: pairs a minute apart (1/2, 3/4, 8/9) overlapped at 1280 px.
  const markers = markersAt([50, 49, 40, 39.5, 30, 20, 10, 5, 4.5]);

  it("at a laptop's width keeps markers apart and groups only those that would overlap", () => {
    const groups = groupChartMarkers(markers, { spanMs: 60 * MINUTE_MS, plotWidthPx: 1180 });
    expect(groups.map((group) => group.label)).toEqual(["1–2", "3–4", "5", "6", "7", "8–9"]);
    expect(groups[0]?.kind).toBe("mixed");
    expect(groups[2]?.kind).toBe("policy-change");
    expect(groups[0]?.atMs).toBe(markers[0]?.atMs);
  });

  it("on a phone groups the last hour into a few labels, never one per marker", () => {
    const groups = groupChartMarkers(markers, { spanMs: 60 * MINUTE_MS, plotWidthPx: 300 });
    expect(groups.map((group) => group.label)).toEqual(["1–2", "3–4", "5", "6", "7–9"]);
    // Labels are at least a label's room apart.
    const gapsPx = groups
      .slice(1)
      .map((group, index) => ((group.atMs - (groups[index]?.atMs ?? 0)) / (60 * MINUTE_MS)) * 300);
    expect(Math.min(...gapsPx)).toBeGreaterThanOrEqual(30);
  });

  it("keeps every marker, in order, numbered as the list beside the chart", () => {
    for (const plotWidthPx of [50, 300, 1180, 5000]) {
      const groups = groupChartMarkers(markers, { spanMs: 60 * MINUTE_MS, plotWidthPx });
      expect(groups.flatMap((group) => group.markers)).toEqual(markers);
      let next = 1;
      for (const group of groups) {
        expect(group.firstNumber).toBe(next);
        expect(group.lastNumber - group.firstNumber + 1).toBe(group.markers.length);
        next = group.lastNumber + 1;
      }
    }
  });

  it("before the chart is measured, or with no markers, groups nothing", () => {
    expect(
      groupChartMarkers(markers, { spanMs: 60 * MINUTE_MS, plotWidthPx: 0 }).map((g) => g.label),
    ).toEqual(["1", "2", "3", "4", "5", "6", "7", "8", "9"]);
    expect(
      groupChartMarkers(markers, { spanMs: Number.NaN, plotWidthPx: 300 }).map((g) => g.label),
    ).toHaveLength(9);
    expect(groupChartMarkers([], { spanMs: 60 * MINUTE_MS, plotWidthPx: 300 })).toEqual([]);
  });

  it("markers at the same instant always share a label", () => {
    const same = markersAt([10, 10, 10]);
    expect(
      groupChartMarkers(same, { spanMs: 60 * MINUTE_MS, plotWidthPx: 5000 }).map((g) => g.label),
    ).toEqual(["1–3"]);
  });
});

describe("plotFraction", () => {
  it.each([
    [hour.startMs, 0],
    [hour.endMs, 1],
    [hour.startMs + 30 * MINUTE_MS, 0.5],
    [hour.endMs + MINUTE_MS, 1],
    [Number.NaN, 0],
  ])("%d -> %d", (atMs, fraction) => {
    expect(plotFraction(atMs, hour)).toBe(fraction);
  });
});

describe("splitAtPartialBucket", () => {
  it("takes the partial bucket out of the line and draws it joined to the one before", () => {
    expect(splitAtPartialBucket([0.1, 0.2, 0.3, 0.05], 3)).toEqual({
      complete: [0.1, 0.2, 0.3, null],
      partial: [null, null, 0.3, 0.05],
    });
  });

  it("with no partial bucket leaves the line whole", () => {
    expect(splitAtPartialBucket([0.1, null, 0.3], -1)).toEqual({
      complete: [0.1, null, 0.3],
      partial: [null, null, null],
    });
    expect(splitAtPartialBucket([0.1], 5).partial).toEqual([null]);
  });

  it("a partial bucket without traffic stays a gap", () => {
    expect(splitAtPartialBucket([0.1, null], 1)).toEqual({
      complete: [0.1, null],
      partial: [0.1, null],
    });
  });
});

describe("partialBucketIndex", () => {
  it("is the last bucket when the current one is drawn, else -1", () => {
    const live = chartWindow(CHART_RANGES["15m"], { nowMs: NOW_MS, includeCurrentBucket: true });
    expect(partialBucketIndex(live)).toBe(14);
    expect(partialBucketIndex(chartWindow(CHART_RANGES["15m"], { nowMs: NOW_MS }))).toBe(-1);
  });
});
