"use client";

import { useId } from "react";
import {
  CartesianGrid,
  LineChart,
  ReferenceLine,
  ResponsiveContainer,
  Tooltip,
  YAxis,
} from "recharts";
// Direct module imports, not the lib/console entry point: this is client code.
import { partialBucketIndex } from "@/lib/console/chart-overlays";
import {
  type ChartMarker,
  hasNoTraffic,
  MARKER_KIND_WORDS,
  type RejectionRateChartData,
  toRateChartRows,
} from "@/lib/console/chart-series";
import { formatNumber, formatPercent } from "@/lib/console/format";
import { Badge } from "../ui/badge";
import { LocalTime } from "../ui/local-time";
import { MARKER_COLORS, seriesStyle } from "./chart-theme";
import { MarkerOverlay } from "./marker-overlay";
import {
  BucketTime,
  ChartCanvas,
  ChartNumbers,
  NoTrafficState,
  PartialBucketNote,
  RIGHT_MARGIN_PX,
  Swatch,
  seriesLines,
  timeTooltipProps,
  timeXAxis,
} from "./time-chart";

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
 * The bucket still filling (the current minute, when shown) is drawn dotted and faint, so it never
 * reads as a sudden drop. Markers close in time share one numbered label at the chart's width;
 * hovering, tapping or pressing Enter on it lists them (components/charts/marker-overlay.tsx).
 *
 * Accessible without the picture: a sentence per scope (overall and peak rate), the numbered
 * markers as a list of links to their audit entries, and every number in a table.
 */
export function RejectionChart({ data, markers = [], title, height = 280 }: RejectionChartProps) {
  const titleId = useId();

  if (hasNoTraffic(data)) {
    return (
      <figure className="chart" aria-labelledby={titleId}>
        <figcaption id={titleId} className="chart-title">
          {title}
        </figcaption>
        <NoTrafficState window={data} title="No traffic in this range" subject="No scope" />
        <MarkerList markers={markers} />
      </figure>
    );
  }

  const rows = toRateChartRows(data).map((row, index) => ({ ...row, index }));
  const partialIndex = partialBucketIndex(data);
  return (
    <figure className="chart" aria-labelledby={titleId}>
      <figcaption id={titleId} className="chart-title">
        {title}
      </figcaption>
      <ChartCanvas height={height} label={`Drawing ${title}`}>
        {(widthPx) => (
          <>
            <ResponsiveContainer width="100%" height="100%">
              <LineChart
                data={rows}
                margin={{ top: 24, right: RIGHT_MARGIN_PX, bottom: 0, left: 0 }}
              >
                <CartesianGrid stroke="#e6e9ee" vertical={false} />
                {timeXAxis(data)}
                <YAxis
                  domain={[0, 1]}
                  ticks={PERCENT_TICKS}
                  tickFormatter={(value: number) => formatPercent(value)}
                  width={44}
                  tick={{ fontSize: 12 }}
                />
                <Tooltip {...timeTooltipProps(data, formatPercent)} />
                {markers.map((marker) => (
                  <ReferenceLine
                    key={marker.auditEntryId}
                    x={marker.atMs}
                    stroke={MARKER_COLORS[marker.kind]}
                    strokeDasharray="3 3"
                    ifOverflow="discard"
                  />
                ))}
                {data.series.flatMap((series, index) =>
                  seriesLines({
                    name: series.scope,
                    values: rows.map((row) => row.values[index] ?? null),
                    style: seriesStyle(index),
                    partialIndex,
                  }),
                )}
              </LineChart>
            </ResponsiveContainer>
            <MarkerOverlay markers={markers} window={data} widthPx={widthPx} />
          </>
        )}
      </ChartCanvas>
      <ul className="chart-legend" aria-label="Scopes">
        {data.series.map((series, index) => (
          <li key={series.scope}>
            <Swatch style={seriesStyle(index)} />
            <code>{series.scope}</code>: {formatPercent(series.overallRate)} of{" "}
            {formatNumber(series.totalRequests)} requests rejected
            {series.peakRate !== null && series.peakAtMs !== null ? (
              <>
                ; highest {formatPercent(series.peakRate)} at{" "}
                <LocalTime at={series.peakAtMs} short />
              </>
            ) : null}
          </li>
        ))}
        {partialIndex >= 0 ? <PartialBucketNote bucketMs={data.bucketMs} /> : null}
      </ul>
      {data.omittedScopes.length > 0 ? (
        <p className="muted small">
          {data.omittedScopes.length} more {data.omittedScopes.length === 1 ? "scope" : "scopes"}{" "}
          with fewer rejections not drawn: {data.omittedScopes.join(", ")}.
        </p>
      ) : null}
      <MarkerList markers={markers} />
      <ChartNumbers caption={`${title}: rejection rate per scope and time`}>
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
                <BucketTime atMs={row.startMs} isPartial={rowIndex === partialIndex} />
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
      </ChartNumbers>
    </figure>
  );
}

function MarkerList({ markers }: { markers: readonly ChartMarker[] }) {
  if (markers.length === 0) return null;
  return (
    <ol className="chart-markers" aria-label="Changes in this range">
      {markers.map((marker) => (
        <li key={marker.auditEntryId}>
          <Badge tone={MARKER_KIND_WORDS[marker.kind].tone}>
            {MARKER_KIND_WORDS[marker.kind].long}
          </Badge>{" "}
          <LocalTime at={marker.atMs} short /> <a href={marker.href}>{marker.label}</a>
        </li>
      ))}
    </ol>
  );
}
