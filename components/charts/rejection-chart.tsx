"use client";

import { useId } from "react";
import {
  CartesianGrid,
  Line,
  LineChart,
  ReferenceLine,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from "recharts";
// Direct module imports, not the lib/console entry point: this is client code.
import {
  type ChartMarker,
  type ChartRow,
  hasNoTraffic,
  isChartRow,
  type RejectionRateChartData,
  timeTicks,
  toRateChartRows,
} from "@/lib/console/chart-series";
import {
  formatDurationMs,
  formatNumber,
  formatPercent,
  formatTimeSpan,
  formatTimeTick,
} from "@/lib/console/format";
import { Badge } from "../ui/badge";
import { EmptyState } from "../ui/empty-state";
import { LocalTime } from "../ui/local-time";
import { SkeletonChart } from "../ui/skeleton";
import { MARKER_COLORS, seriesStyle } from "./chart-theme";
import { isolatedDot } from "./isolated-dot";
import { useIsMounted } from "./use-is-mounted";

export interface RejectionChartProps {
  /** From `buildRejectionRateSeries`. */
  data: RejectionRateChartData;
  /** From `buildChartMarkers`, for the same window. @default [] */
  markers?: readonly ChartMarker[];
  /** What the chart shows, e.g. "Rejection rate, last hour". */
  title: string;
  /** Pixels. @default 280 */
  height?: number;
}

const PERCENT_TICKS = [0, 0.25, 0.5, 0.75, 1];

/**
 * Per-scope rejection rate over time, with policy changes and incident overrides marked on the
 * time axis. A bucket without traffic is a gap in its line, never a drop to 0%.
 *
 * Accessible without the picture: a sentence per scope (overall and peak rate), the numbered
 * markers as a list of links to their audit entries, and every number in a table. The markers
 * drawn on the chart link too, for the mouse; keyboards and screen readers use the list.
 */
export function RejectionChart({ data, markers = [], title, height = 280 }: RejectionChartProps) {
  const isMounted = useIsMounted();
  const titleId = useId();
  const spanMs = data.endMs - data.startMs;
  const isLongSpan = spanMs > 12 * 60 * 60 * 1000;

  if (hasNoTraffic(data)) {
    return (
      <figure className="chart" aria-labelledby={titleId}>
        <figcaption id={titleId} className="chart-title">
          {title}
        </figcaption>
        <EmptyState title="No traffic in this range">
          No scope evaluated a request in the {formatDurationMs(spanMs)} shown, so there is no
          rejection rate to draw.
        </EmptyState>
        <MarkerList markers={markers} />
      </figure>
    );
  }

  const rows = toRateChartRows(data);
  return (
    <figure className="chart" aria-labelledby={titleId}>
      <figcaption id={titleId} className="chart-title">
        {title}
      </figcaption>
      {isMounted ? (
        <div className="chart-canvas" style={{ height }}>
          <ResponsiveContainer width="100%" height="100%">
            <LineChart data={rows} margin={{ top: 18, right: 12, bottom: 0, left: 0 }}>
              <CartesianGrid stroke="#e6e9ee" vertical={false} />
              <XAxis
                type="number"
                dataKey="xMs"
                domain={[data.startMs, data.endMs]}
                ticks={timeTicks(data, {
                  utcOffsetMs: -new Date(data.endMs).getTimezoneOffset() * 60_000,
                })}
                tickFormatter={(value: number) => formatTimeTick(value, spanMs)}
                tick={{ fontSize: 12 }}
              />
              <YAxis
                domain={[0, 1]}
                ticks={PERCENT_TICKS}
                tickFormatter={(value: number) => formatPercent(value)}
                width={44}
                tick={{ fontSize: 12 }}
              />
              <Tooltip
                labelFormatter={(_label, payload) => {
                  const row: unknown = payload[0]?.payload;
                  return isChartRow(row)
                    ? formatTimeSpan(row.startMs, row.endMs, { withWeekday: isLongSpan })
                    : "";
                }}
                formatter={(value) =>
                  typeof value === "number" ? formatPercent(value) : "no traffic"
                }
              />
              {markers.map((marker, index) => (
                <ReferenceLine
                  key={marker.auditEntryId}
                  x={marker.atMs}
                  stroke={MARKER_COLORS[marker.kind]}
                  strokeDasharray="3 3"
                  ifOverflow="discard"
                  label={(props: unknown) => (
                    <MarkerLabel
                      viewBox={viewBoxOf(props)}
                      number={index + 1}
                      label={marker.label}
                      href={marker.href}
                      color={MARKER_COLORS[marker.kind]}
                    />
                  )}
                />
              ))}
              {data.series.map((series, index) => {
                const style = seriesStyle(index);
                return (
                  <Line
                    key={series.scope}
                    name={series.scope}
                    type="linear"
                    dataKey={(row: ChartRow) => row.values[index] ?? null}
                    stroke={style.stroke}
                    strokeDasharray={style.dash}
                    strokeWidth={2}
                    dot={isolatedDot(
                      rows.map((row) => row.values[index] ?? null),
                      style.stroke,
                    )}
                    connectNulls={false}
                    isAnimationActive={false}
                  />
                );
              })}
            </LineChart>
          </ResponsiveContainer>
        </div>
      ) : (
        <SkeletonChart height={height} label={`Drawing ${title}`} />
      )}
      <ul className="chart-legend" aria-label="Scopes">
        {data.series.map((series, index) => {
          const style = seriesStyle(index);
          return (
            <li key={series.scope}>
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
              <code>{series.scope}</code>: {formatPercent(series.overallRate)} of{" "}
              {formatNumber(series.totalRequests)} requests rejected
              {series.peakRate !== null && series.peakAtMs !== null ? (
                <>
                  ; highest {formatPercent(series.peakRate)} at{" "}
                  <LocalTime at={series.peakAtMs} short />
                </>
              ) : null}
            </li>
          );
        })}
      </ul>
      {data.omittedScopes.length > 0 ? (
        <p className="muted small">
          {data.omittedScopes.length} more {data.omittedScopes.length === 1 ? "scope" : "scopes"}{" "}
          with fewer rejections not drawn: {data.omittedScopes.join(", ")}.
        </p>
      ) : null}
      <MarkerList markers={markers} />
      <details className="chart-table">
        <summary>Show the numbers</summary>
        <div className="table-scroll">
          <table className="data">
            <caption className="visually-hidden">
              {title}: rejection rate per scope and time
            </caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                {data.series.map((series) => (
                  <th key={series.scope} scope="col">
                    <code>{series.scope}</code>
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((row, rowIndex) => (
                <tr key={row.startMs}>
                  <th scope="row">
                    <LocalTime at={row.startMs} short />
                  </th>
                  {data.series.map((series) => {
                    const point = series.points[rowIndex];
                    return (
                      <td key={series.scope}>
                        {point === undefined || point.rate === null ? (
                          <span className="muted">no traffic</span>
                        ) : (
                          <span
                            title={`${formatNumber(point.rejected)} of ${formatNumber(point.requests)} rejected`}
                          >
                            {formatPercent(point.rate)}
                          </span>
                        )}
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

function MarkerList({ markers }: { markers: readonly ChartMarker[] }) {
  if (markers.length === 0) return null;
  return (
    <ol className="chart-markers" aria-label="Changes in this range">
      {markers.map((marker) => (
        <li key={marker.auditEntryId}>
          <Badge tone={marker.kind === "incident-override" ? "warn" : "info"}>
            {marker.kind === "incident-override" ? "incident override" : "policy change"}
          </Badge>{" "}
          <LocalTime at={marker.atMs} short /> <a href={marker.href}>{marker.label}</a>
        </li>
      ))}
    </ol>
  );
}

interface MarkerViewBox {
  x: number;
  y: number;
}

/** Recharts passes a label renderer its props untyped; take only the position, if present. */
function viewBoxOf(props: unknown): MarkerViewBox | null {
  if (typeof props !== "object" || props === null || !("viewBox" in props)) return null;
  const { viewBox } = props;
  if (typeof viewBox !== "object" || viewBox === null) return null;
  if (!("x" in viewBox) || !("y" in viewBox)) return null;
  const { x, y } = viewBox;
  return typeof x === "number" && typeof y === "number" ? { x, y } : null;
}

/**
 * A marker's number at the top of its line, linking to the audit entry. Out of the tab order: the
 * numbered list below the chart carries the same links, so keyboards need not visit each marker.
 */
function MarkerLabel({
  viewBox,
  number,
  label,
  href,
  color,
}: {
  viewBox: MarkerViewBox | null;
  number: number;
  label: string;
  href: string;
  color: string;
}) {
  if (viewBox === null) return <g />;
  return (
    <a
      href={href}
      aria-label={`Change ${number}: ${label}`}
      tabIndex={-1}
      className="chart-marker-label"
    >
      <circle cx={viewBox.x} cy={viewBox.y - 9} r={8} fill={color} />
      <text
        x={viewBox.x}
        y={viewBox.y - 9}
        textAnchor="middle"
        dominantBaseline="central"
        fill="#fff"
        fontSize={10}
        fontWeight={700}
      >
        {number}
      </text>
    </a>
  );
}
