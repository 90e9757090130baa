"use client";

import { type ReactNode, useEffect, useRef, useState } from "react";
import { Line, XAxis } from "recharts";
// Direct module imports, not the lib/console entry point: this is client code.
import { splitAtPartialBucket } from "@/lib/console/chart-overlays";
import { type ChartWindow, isChartRow, timeTicks } from "@/lib/console/chart-series";
import { formatDurationMs, formatTimeSpan, formatTimeTick } from "@/lib/console/format";
import { EmptyState } from "../ui/empty-state";
import { LocalTime } from "../ui/local-time";
import { ScrollRegion } from "../ui/scroll-region";
import { SkeletonChart } from "../ui/skeleton";
import { isolatedDot } from "./isolated-dot";
import { useIsMounted } from "./use-is-mounted";

/**
 * What every time chart of the console shares (the rejection chart and the dry-run charts): the
 * time axis in the viewer's zone, the tooltip's time span, the empty state for a window without
 * traffic, the measured canvas with its server placeholder, a line's swatch, and a line drawn
 * apart over the bucket still filling.
 */

/** Pixels the y axis takes on the left of every time chart; the plot starts after it. */
export const Y_AXIS_WIDTH_PX = 44;
/** The chart's right margin, pixels. */
export const RIGHT_MARGIN_PX = 12;

/** Spans longer than this name the weekday in the tooltip. */
const LONG_SPAN_MS = 12 * 60 * 60 * 1000;

export interface LineStyle {
  readonly stroke: string;
  readonly dash: string;
}

/** The time axis, as an `<XAxis>` (recharts needs its own element as a direct child). */
export function timeXAxis(window: ChartWindow) {
  const spanMs = window.endMs - window.startMs;
  return (
    <XAxis
      type="number"
      dataKey="xMs"
      domain={[window.startMs, window.endMs]}
      ticks={timeTicks(window, {
        utcOffsetMs: -new Date(window.endMs).getTimezoneOffset() * 60_000,
      })}
      tickFormatter={(value: number) => formatTimeTick(value, spanMs)}
      tick={{ fontSize: 12 }}
    />
  );
}

/** The tooltip's props: its title is the hovered bucket's span, its values formatted. */
export function timeTooltipProps(window: ChartWindow, formatValue: (value: number) => string) {
  const isLongSpan = window.endMs - window.startMs > LONG_SPAN_MS;
  return {
    labelFormatter: (_label: unknown, payload: readonly { payload?: unknown }[]) => {
      const row: unknown = payload[0]?.payload;
      return isChartRow(row)
        ? formatTimeSpan(row.startMs, row.endMs, { withWeekday: isLongSpan })
        : "";
    },
    formatter: (value: unknown) => (typeof value === "number" ? formatValue(value) : "no traffic"),
  };
}

/** The empty state of a window in which nothing was counted. */
export function NoTrafficState({
  window,
  title,
  subject,
}: {
  window: ChartWindow;
  title: string;
  /** Who evaluated nothing, e.g. "No scope" or "Neither scope". */
  subject: string;
}) {
  return (
    <EmptyState title={title}>
      {subject} evaluated a request in the {formatDurationMs(window.endMs - window.startMs)} shown
      {subject === "No scope" ? ", so there is no rejection rate to draw" : ""}.
    </EmptyState>
  );
}

/**
 * The drawing area: a placeholder on the server and before mount (recharts measures the DOM),
 * then `children` given the canvas's width in pixels (0 until measured), for what is laid over
 * the chart.
 */
export function ChartCanvas({
  height,
  label,
  children,
}: {
  height: number;
  /** Names the placeholder, e.g. "Drawing Rejection rate". */
  label: string;
  children: (widthPx: number) => ReactNode;
}) {
  const isMounted = useIsMounted();
  const ref = useRef<HTMLDivElement>(null);
  const [widthPx, setWidthPx] = useState(0);
  useEffect(() => {
    const element = ref.current;
    if (!isMounted || element === null) return;
    setWidthPx(element.clientWidth);
    const observer = new ResizeObserver(() => setWidthPx(element.clientWidth));
    observer.observe(element);
    return () => observer.disconnect();
  }, [isMounted]);
  if (!isMounted) return <SkeletonChart height={height} label={label} />;
  return (
    <div className="chart-canvas" style={{ height }} ref={ref}>
      {children(widthPx)}
    </div>
  );
}

/** A line's colour and dash, as the legend shows it. */
export function Swatch({ style }: { style: LineStyle }) {
  return (
    <svg width="24" height="10" aria-hidden="true" className="chart-swatch">
      <line
        x1="0"
        y1="5"
        x2="24"
        y2="5"
        stroke={style.stroke}
        strokeWidth="2"
        strokeDasharray={style.dash}
      />
    </svg>
  );
}

/** How the bucket still filling is drawn: dotted and faint, with a hollow point. */
export const PARTIAL_DASH = "2 4";

/**
 * One series as recharts `<Line>` elements: the complete buckets as usual, and, when the last
 * bucket is still filling (`partialIndex` >= 0), a dotted faint segment into it with a hollow
 * point, so a minute half counted never reads as a sudden drop. Elements, not a component:
 * recharts reads its children's props.
 */
export function seriesLines({
  name,
  values,
  style,
  partialIndex,
}: {
  name: string;
  values: readonly (number | null)[];
  style: LineStyle;
  partialIndex: number;
}) {
  const { complete, partial } = splitAtPartialBucket(values, partialIndex);
  const lines = [
    <Line
      key={name}
      name={name}
      type="linear"
      dataKey={(row: { index: number }) => complete[row.index] ?? null}
      stroke={style.stroke}
      strokeDasharray={style.dash}
      strokeWidth={2}
      dot={isolatedDot(complete, style.stroke)}
      connectNulls={false}
      isAnimationActive={false}
    />,
  ];
  if (partialIndex >= 0) {
    lines.push(
      <Line
        key={`${name} (still counting)`}
        name={`${name} (current minute, still counting)`}
        type="linear"
        dataKey={(row: { index: number }) => partial[row.index] ?? null}
        stroke={style.stroke}
        strokeOpacity={0.55}
        strokeDasharray={PARTIAL_DASH}
        strokeWidth={2}
        dot={(props: { cx?: number; cy?: number; index: number }) =>
          props.index === partialIndex && props.cx !== undefined && props.cy !== undefined ? (
            <circle
              key={`partial-${props.index}`}
              cx={props.cx}
              cy={props.cy}
              r={3.5}
              fill="#fff"
              stroke={style.stroke}
              strokeWidth={1.5}
            />
          ) : (
            <g key={`partial-${props.index}`} />
          )
        }
        legendType="none"
        connectNulls={false}
        isAnimationActive={false}
      />,
    );
  }
  return lines;
}

/** The legend's note for the bucket still filling, beside the lines' swatches. */
export function PartialBucketNote({ bucketMs }: { bucketMs: number }) {
  return (
    <li className="muted" data-testid="partial-bucket-note">
      <Swatch style={{ stroke: "#5b6470", dash: PARTIAL_DASH }} /> Dotted at the right edge: the
      current {bucketMs === 60_000 ? "minute" : formatDurationMs(bucketMs)}, still counting
    </li>
  );
}

/**
 * Every number of a chart, behind "Show the numbers": a table in a scrolling region that a
 * keyboard can reach and scroll (it takes focus), named by `caption`.
 */
export function ChartNumbers({ caption, children }: { caption: string; children: ReactNode }) {
  return (
    <details className="chart-table">
      <summary>Show the numbers</summary>
      <ScrollRegion label={caption}>
        <table className="data">
          <caption className="visually-hidden">{caption}</caption>
          {children}
        </table>
      </ScrollRegion>
    </details>
  );
}

/** A row's time in the numbers table, saying so when its bucket is still filling. */
export function BucketTime({ atMs, isPartial }: { atMs: number; isPartial: boolean }) {
  return (
    <>
      <LocalTime at={atMs} short />
      {isPartial ? <span className="muted small"> (still counting)</span> : null}
    </>
  );
}
