/**
 * What a time chart draws over its lines, pure so it is tested without a browser: change markers
 * grouped where they would overlap at the chart's width, and the split of each line at the bucket
 * still filling (the current minute), which is drawn apart so it never reads as a sudden drop.
 */
import type { ChartMarker } from "./chart-series";

// ---------------------------------------------------------------------------------------------
// Marker groups

/** Markers close enough in time to share one label at the chart's width. */
export interface ChartMarkerGroup {
  /** Where the group's label and line go: its first marker's time. */
  readonly atMs: number;
  /** Oldest first, as numbered in the list beside the chart. */
  readonly markers: readonly ChartMarker[];
  /** The markers' numbers in that list, 1-based: the first and the last. */
  readonly firstNumber: number;
  readonly lastNumber: number;
  /** What the label shows: "3", or "3–5" for a group. */
  readonly label: string;
  /** Its kind when all markers share one, else `mixed`. */
  readonly kind: ChartMarker["kind"] | "mixed";
}

export interface MarkerGroupOptions {
  /** The time the plot area spans (the chart window's end minus its start). */
  spanMs: number;
  /** The plot area's width in pixels (the chart's width less its axes). */
  plotWidthPx: number;
  /**
   * The least distance between two labels' centres, pixels: a label is a circle of about 18 px,
   * wider for a range such as "10–12".
   * @default 30
   */
  minGapPx?: number;
}

/**
 * Groups markers (oldest first, as `buildChartMarkers` returns them) so that no two labels are
 * closer than `minGapPx` at `plotWidthPx`: a group starts at a marker and takes every following
 * one within that distance of the group's first, so a group never grows wider than one label's
 * room however many markers fall in it. Without a usable width or span (before the chart is
 * measured) every marker is a group of its own. Numbers stay those of the full list.
 */
export function groupChartMarkers(
  markers: readonly ChartMarker[],
  options: MarkerGroupOptions,
): ChartMarkerGroup[] {
  const minGapPx = options.minGapPx ?? 30;
  const isMeasured =
    Number.isFinite(options.spanMs) &&
    options.spanMs > 0 &&
    Number.isFinite(options.plotWidthPx) &&
    options.plotWidthPx > 0;
  const minGapMs = isMeasured ? (minGapPx / options.plotWidthPx) * options.spanMs : 0;
  const groups: ChartMarker[][] = [];
  for (const marker of markers) {
    const current = groups.at(-1);
    const first = current?.[0];
    if (current !== undefined && first !== undefined && marker.atMs - first.atMs < minGapMs) {
      current.push(marker);
    } else {
      groups.push([marker]);
    }
  }
  let number = 1;
  return groups.map((group) => {
    const firstNumber = number;
    const lastNumber = number + group.length - 1;
    number = lastNumber + 1;
    const kinds = new Set(group.map((marker) => marker.kind));
    const [onlyKind] = kinds;
    return {
      atMs: group[0]?.atMs ?? 0,
      markers: group,
      firstNumber,
      lastNumber,
      label: firstNumber === lastNumber ? String(firstNumber) : `${firstNumber}–${lastNumber}`,
      kind: kinds.size === 1 && onlyKind !== undefined ? onlyKind : "mixed",
    };
  });
}

/**
 * Where an instant falls across the plot area, from 0 (its left edge) to 1 (its right edge),
 * clamped; 0 for an unusable window or time.
 */
export function plotFraction(atMs: number, window: { startMs: number; endMs: number }): number {
  const spanMs = window.endMs - window.startMs;
  if (!(spanMs > 0) || !Number.isFinite(atMs)) return 0;
  return Math.min(1, Math.max(0, (atMs - window.startMs) / spanMs));
}

// ---------------------------------------------------------------------------------------------
// The partial current bucket

export interface SplitLineValues {
  /** The complete buckets; the partial one is `null` (a gap). */
  readonly complete: readonly (number | null)[];
  /**
   * Only the partial bucket and the one before it (so the two connect), every other `null`; all
   * `null` when no bucket is partial.
   */
  readonly partial: readonly (number | null)[];
}

/**
 * One line's values split at the bucket still filling, `partialIndex` (the last, when the chart
 * includes it; `-1` or out of range for none): the chart draws `complete` as usual and `partial`
 * dotted and faint, so a minute half counted reads as "still counting", not as a drop.
 */
export function splitAtPartialBucket(
  values: readonly (number | null)[],
  partialIndex: number,
): SplitLineValues {
  if (!(Number.isInteger(partialIndex) && partialIndex >= 0 && partialIndex < values.length)) {
    return { complete: values, partial: values.map(() => null) };
  }
  return {
    complete: values.map((value, index) => (index === partialIndex ? null : value)),
    partial: values.map((value, index) =>
      index === partialIndex || index === partialIndex - 1 ? value : null,
    ),
  };
}

/** The index of the partial bucket in a window's buckets, or -1 when all are complete. */
export function partialBucketIndex(window: {
  readonly bucketStartsMs: readonly number[];
  readonly partialBucketStartMs: number | null;
}): number {
  if (window.partialBucketStartMs === null) return -1;
  return window.bucketStartsMs.indexOf(window.partialBucketStartMs);
}
