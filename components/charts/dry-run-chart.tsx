"use client";

import { useId } from "react";
import { CartesianGrid, LineChart, ResponsiveContainer, Tooltip, YAxis } from "recharts";
// Direct module imports, not the lib/console entry point: this is client code.
import { partialBucketIndex } from "@/lib/console/chart-overlays";
import {
  type DryRunChartData,
  type DryRunSeries,
  toDryRunChartRows,
} from "@/lib/console/chart-series";
import { formatCompactNumber, formatNumber, formatPercent } from "@/lib/console/format";
import { EmptyState } from "../ui/empty-state";
import { BLOCKED_STYLE, WOULD_BLOCK_STYLE } from "./chart-theme";
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
}

/**
 * Blocked (by the limit in force) against would-block (by the dry-run candidate), per candidate,
 * over time: what promoting the candidate would change, measured on real traffic. A bucket in
 * which a scope saw no requests is a gap, not a zero. Each candidate has a sentence with the
 * totals and a table of every number, so the chart is never the only way to read it.
 */
export function DryRunChart({ data, title, height = 200 }: DryRunChartProps) {
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
          />
        ))
      )}
    </section>
  );
}

function DryRunPairChart({
  data,
  series,
  seriesIndex,
  height,
}: {
  data: DryRunChartData;
  series: DryRunSeries;
  seriesIndex: number;
  height: number;
}) {
  const hasTraffic = series.enforcedRequests > 0 || series.dryRunRequests > 0;
  const rows = toDryRunChartRows(data, seriesIndex).map((row, index) => ({ ...row, index }));
  const partialIndex = partialBucketIndex(data);

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
            Blocked {formatNumber(series.totalBlocked)} of {formatNumber(series.enforcedRequests)}{" "}
            requests ({formatPercent(series.blockedRate)}); would block{" "}
            {formatNumber(series.totalWouldBlock)} of {formatNumber(series.dryRunRequests)} (
            {formatPercent(series.wouldBlockRate)}).
          </p>
          <ChartCanvas height={height} label={`Drawing ${series.label}`}>
            {() => (
              <ResponsiveContainer width="100%" height="100%">
                <LineChart
                  data={rows}
                  margin={{ top: 8, right: RIGHT_MARGIN_PX, bottom: 0, left: 0 }}
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
