"use client";

import { type ReactNode, useId } from "react";
import {
  CartesianGrid,
  LineChart,
  ReferenceArea,
  ReferenceLine,
  ResponsiveContainer,
  Tooltip,
  YAxis,
} from "recharts";
// Direct module imports, not the lib/console entry point: this is client code.
import { partialBucketIndex } from "@/lib/console/chart-overlays";
import {
  type ChartMarker,
  type DryRunChartData,
  type DryRunSeries,
  toDryRunChartRows,
} from "@/lib/console/chart-series";
import { formatCompactNumber, formatNumber, formatPercent } from "@/lib/console/format";
import { Badge } from "../ui/badge";
import { EmptyState } from "../ui/empty-state";
import { LocalTime } from "../ui/local-time";
import { BLOCKED_STYLE, MARKER_COLORS, WOULD_BLOCK_STYLE } from "./chart-theme";
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

export interface DryRunChartProps {
  /** From `buildDryRunSeries`. */
  data: DryRunChartData;
  /** What the charts show, e.g. "Dry-run candidates, last hour". */
  title: string;
  /** Pixels, per candidate. @default 200 */
  height?: number;
  /**
   * Changes to mark on the time axis (a candidate's creation and each change), from
   * `buildChartMarkers` for the same window. @default []
   */
  markers?: readonly ChartMarker[];
  /**
   * Where the minutes the page's totals compare begin (`compareCandidate`'s span start), for a
   * chart of one pair: the minutes before it are shaded as "not in the totals", and `summary`
   * replaces the sentence over the whole window, so the chart never states a second comparison
   * over another span. Unset: the totals are over the whole window and the chart says them.
   */
  compared?: { readonly startMs: number; readonly summary: ReactNode };
}

/** The shade over the minutes outside the compared span. */
const OUTSIDE_SPAN_FILL = "#8a94a3";

/**
 * Blocked (by the limit in force) against would-block (by the dry-run candidate), per candidate,
 * over time: what promoting the candidate would change, measured on real traffic. A bucket in
 * which a scope saw no requests is a gap, not a zero. Each candidate has a sentence with the
 * totals and a table of every number, so the chart is never the only way to read it.
 */
export function DryRunChart({
  data,
  title,
  height = 200,
  markers = [],
  compared,
}: DryRunChartProps) {
  const titleId = useId();
  return (
    <section className="chart" aria-labelledby={titleId}>
      <h3 id={titleId} className="chart-title">
        {title}
      </h3>
      {data.series.length === 0 ? (
        <EmptyState title="No dry-run candidates">
          Create a candidate in dry-run to see what it would block next to what is blocked today.
        </EmptyState>
      ) : (
        data.series.map((series, index) => (
          <DryRunPairChart
            // Pairs are unique by their two scopes.
            key={`${series.dryRunScope}|${series.enforcedScope}`}
            data={data}
            series={series}
            seriesIndex={index}
            height={height}
            markers={markers}
            compared={compared}
          />
        ))
      )}
      <MarkerList markers={markers} />
    </section>
  );
}

function DryRunPairChart({
  data,
  series,
  seriesIndex,
  height,
  markers,
  compared,
}: {
  data: DryRunChartData;
  series: DryRunSeries;
  seriesIndex: number;
  height: number;
  markers: readonly ChartMarker[];
  compared: DryRunChartProps["compared"];
}) {
  const hasTraffic = series.enforcedRequests > 0 || series.dryRunRequests > 0;
  const rows = toDryRunChartRows(data, seriesIndex).map((row, index) => ({ ...row, index }));
  const partialIndex = partialBucketIndex(data);
  const outsideEndMs =
    compared === undefined ? null : Math.min(data.endMs, Math.max(data.startMs, compared.startMs));
  const hasOutside = outsideEndMs !== null && outsideEndMs > data.startMs;

  return (
    <figure className="chart-pair">
      <figcaption>
        <strong>{series.label}</strong>
        <span className="muted small">
          {" "}
          (<code>{series.dryRunScope}</code> in dry-run next to <code>{series.enforcedScope}</code>)
        </span>
      </figcaption>
      {!hasTraffic ? (
        <NoTrafficState window={data} title="No traffic yet" subject="Neither scope" />
      ) : (
        <>
          <p className="chart-summary">
            {compared !== undefined ? (
              compared.summary
            ) : (
              <>
                Blocked {formatNumber(series.totalBlocked)} of{" "}
                {formatNumber(series.enforcedRequests)} requests (
                {formatPercent(series.blockedRate)}); would block{" "}
                {formatNumber(series.totalWouldBlock)} of {formatNumber(series.dryRunRequests)} (
                {formatPercent(series.wouldBlockRate)}).
              </>
            )}
          </p>
          <ChartCanvas height={height} label={`Drawing ${series.label}`}>
            {(widthPx) => (
              <>
                <ResponsiveContainer width="100%" height="100%">
                  <LineChart
                    data={rows}
                    margin={{
                      top: markers.length > 0 ? 24 : 8,
                      right: RIGHT_MARGIN_PX,
                      bottom: 0,
                      left: 0,
                    }}
                  >
                    <CartesianGrid stroke="#e6e9ee" vertical={false} />
                    {timeXAxis(data)}
                    <YAxis
                      allowDecimals={false}
                      tickFormatter={(value: number) => formatCompactNumber(value)}
                      width={44}
                      tick={{ fontSize: 12 }}
                    />
                    <Tooltip {...timeTooltipProps(data, formatNumber)} />
                    {hasOutside ? (
                      <ReferenceArea
                        x1={data.startMs}
                        x2={outsideEndMs}
                        fill={OUTSIDE_SPAN_FILL}
                        fillOpacity={0.12}
                        ifOverflow="hidden"
                      />
                    ) : null}
                    {markers.map((marker) => (
                      <ReferenceLine
                        key={marker.auditEntryId}
                        x={marker.atMs}
                        stroke={MARKER_COLORS[marker.kind]}
                        strokeDasharray="3 3"
                        ifOverflow="discard"
                      />
                    ))}
                    {seriesLines({
                      name: "Blocked",
                      values: rows.map((row) => row.values[0] ?? null),
                      style: BLOCKED_STYLE,
                      partialIndex,
                    })}
                    {seriesLines({
                      name: "Would block",
                      values: rows.map((row) => row.values[1] ?? null),
                      style: WOULD_BLOCK_STYLE,
                      partialIndex,
                    })}
                  </LineChart>
                </ResponsiveContainer>
                <MarkerOverlay markers={markers} window={data} widthPx={widthPx} />
              </>
            )}
          </ChartCanvas>
          <ul className="chart-legend" aria-label="Lines">
            <li>
              <Swatch style={BLOCKED_STYLE} /> Blocked by <code>{series.enforcedScope}</code>
            </li>
            <li>
              <Swatch style={WOULD_BLOCK_STYLE} /> Would be blocked by{" "}
              <code>{series.dryRunScope}</code>
            </li>
            {hasOutside ? (
              <li className="muted" data-testid="outside-span-note">
                <svg width="24" height="10" aria-hidden="true" className="chart-swatch">
                  <rect width="24" height="10" fill={OUTSIDE_SPAN_FILL} fillOpacity={0.25} />
                </svg>{" "}
                Shaded: minutes before the compared span, not in the totals
              </li>
            ) : null}
            {partialIndex >= 0 ? <PartialBucketNote bucketMs={data.bucketMs} /> : null}
          </ul>
          <ChartNumbers caption={`${series.label}: blocked and would-block requests per time`}>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Blocked</th>
                <th scope="col">Would block</th>
              </tr>
            </thead>
            <tbody>
              {series.points.map((point, index) => (
                <tr key={point.startMs}>
                  <th scope="row">
                    <BucketTime atMs={point.startMs} isPartial={index === partialIndex} />
                  </th>
                  <td>
                    <Count value={point.blocked} of={point.enforcedRequests} />
                  </td>
                  <td>
                    <Count value={point.wouldBlock} of={point.dryRunRequests} />
                  </td>
                </tr>
              ))}
            </tbody>
          </ChartNumbers>
        </>
      )}
    </figure>
  );
}

function Count({ value, of }: { value: number | null; of: number }) {
  if (value === null) return <span className="muted">no traffic</span>;
  return (
    <span>
      {formatNumber(value)} <span className="muted small">of {formatNumber(of)}</span>
    </span>
  );
}

/** The marked changes as a list of links, numbered as the chart's labels are. */
function MarkerList({ markers }: { markers: readonly ChartMarker[] }) {
  if (markers.length === 0) return null;
  return (
    <ol className="chart-markers" aria-label="Marked on the chart" data-testid="chart-marker-list">
      {markers.map((marker) => (
        <li key={marker.auditEntryId}>
          <Badge tone="info">candidate</Badge> <LocalTime at={marker.atMs} short />{" "}
          <a href={marker.href}>{marker.label}</a>
        </li>
      ))}
    </ol>
  );
}
