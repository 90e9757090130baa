"use client";

import { useId } from "react";
import { CartesianGrid, LineChart, ResponsiveContainer, Tooltip, YAxis } from "recharts";
// Direct module imports, not the lib/console entry point: this is client code.
import type { ChartWindow } from "@/lib/console/chart-series";
import { formatDurationMs, formatNumber } from "@/lib/console/format";
import type { OutboundBucket, OutboundSeries } from "@/lib/console/outbound-series";
import { seriesStyle } from "./chart-theme";
import {
  BucketTime,
  ChartCanvas,
  ChartNumbers,
  type LineStyle,
  RIGHT_MARGIN_PX,
  Swatch,
  seriesLines,
  timeTooltipProps,
  timeXAxis,
  Y_AXIS_WIDTH_PX,
} from "./time-chart";

export interface OutboundChartsProps {
  /** From `buildOutboundSeries`. */
  series: OutboundSeries;
  /** Pixels of each chart. @default 180 */
  height?: number;
}

interface Line {
  readonly name: string;
  readonly values: readonly (number | null)[];
  readonly style: LineStyle;
}

/** A duration in ms below a second (the buckets' bounds are powers of two), else in s and min. */
function formatMs(ms: number): string {
  return ms < 1_000 ? `${formatNumber(ms)} ms` : formatDurationMs(ms);
}

/** A wait as people read it; a percentile in the last bucket has no upper bound. */
function formatWait(ms: number | null): string {
  if (ms === null) return "no calls";
  if (!Number.isFinite(ms)) return "over 35 min";
  if (ms === 0) return "under 1 ms";
  return `at most ${formatMs(ms)}`;
}

/** One small chart of the panel: lines over the window, a sentence saying what it shows. */
function SmallChart({
  window,
  title,
  summary,
  lines,
  formatValue,
  height,
}: {
  window: ChartWindow;
  title: string;
  summary: string;
  lines: readonly Line[];
  formatValue: (value: number) => string;
  height: number;
}) {
  const titleId = useId();
  const rows = window.bucketStartsMs.map((startMs, index) => ({
    index,
    startMs,
    endMs: startMs + window.bucketMs,
    xMs: startMs + window.bucketMs / 2,
    values: lines.map((line) => line.values[index] ?? null),
  }));
  return (
    <figure className="chart" aria-labelledby={titleId}>
      <figcaption id={titleId} className="chart-title">
        {title}
      </figcaption>
      <ChartCanvas height={height} label={`Drawing ${title}`}>
        {() => (
          <ResponsiveContainer width="100%" height="100%">
            <LineChart data={rows} margin={{ top: 12, right: RIGHT_MARGIN_PX, bottom: 0, left: 0 }}>
              <CartesianGrid stroke="#e6e9ee" vertical={false} />
              {timeXAxis(window)}
              <YAxis
                allowDecimals={false}
                tickFormatter={formatValue}
                width={Y_AXIS_WIDTH_PX}
                tick={{ fontSize: 12 }}
              />
              <Tooltip {...timeTooltipProps(window, formatValue)} />
              {lines.flatMap((line) =>
                seriesLines({
                  name: line.name,
                  values: line.values,
                  style: line.style,
                  partialIndex: -1,
                }),
              )}
            </LineChart>
          </ResponsiveContainer>
        )}
      </ChartCanvas>
      {lines.length > 1 ? (
        <ul className="chart-legend" aria-label={`${title}: lines`}>
          {lines.map((line) => (
            <li key={line.name}>
              <Swatch style={line.style} /> {line.name}
            </li>
          ))}
        </ul>
      ) : null}
      <p className="muted small">{summary}</p>
    </figure>
  );
}

function drawable(value: number | null): number | null {
  return value !== null && Number.isFinite(value) ? value : null;
}

/**
 * An outbound budget's figures per minute: calls, wait percentiles, waits ended by `maxWaitMs` or
 * an abort, the peak of slots in flight and slots freed by their TTL. Each chart says in a
 * sentence what it shows over the window, and every number is in the table behind "Show the
 * numbers".
 */
export function OutboundCharts({ series, height = 180 }: OutboundChartsProps) {
  const { buckets, totals } = series;
  const pick = (read: (bucket: OutboundBucket) => number | null) => buckets.map(read);
  const span = formatDurationMs(series.endMs - series.startMs);
  const count = (value: number) => formatNumber(value);
  return (
    <div className="chart-grid" data-testid="outbound-charts">
      <SmallChart
        window={series}
        title="Calls per minute"
        summary={`${formatNumber(totals.calls)} calls granted in the last ${span}.`}
        lines={[{ name: "Calls", values: pick((b) => b.calls), style: seriesStyle(0) }]}
        formatValue={count}
        height={height}
      />
      <SmallChart
        window={series}
        title="Wait before the call (p50, p90, p99)"
        summary={`Over the last ${span}: p50 ${formatWait(totals.waitP50Ms)}, p90 ${formatWait(totals.waitP90Ms)}, p99 ${formatWait(totals.waitP99Ms)} (each the bound of a power-of-two bucket, so at most twice the true wait).`}
        lines={[
          { name: "p50", values: pick((b) => drawable(b.waitP50Ms)), style: seriesStyle(0) },
          { name: "p90", values: pick((b) => drawable(b.waitP90Ms)), style: seriesStyle(3) },
          { name: "p99", values: pick((b) => drawable(b.waitP99Ms)), style: seriesStyle(1) },
        ]}
        formatValue={formatMs}
        height={height}
      />
      <SmallChart
        window={series}
        title="Waits that hit maxWaitMs, and aborted waits"
        summary={`${formatNumber(totals.waitMaxed)} waits ended by maxWaitMs and ${formatNumber(totals.waitAborted)} aborted in the last ${span}; neither was charged.`}
        lines={[
          { name: "Hit maxWaitMs", values: pick((b) => b.waitMaxed), style: seriesStyle(1) },
          { name: "Aborted", values: pick((b) => b.waitAborted), style: seriesStyle(3) },
        ]}
        formatValue={count}
        height={height}
      />
      <SmallChart
        window={series}
        title="Peak slots in flight"
        summary={`At most ${formatNumber(totals.peakInFlight)} slots held at once on one key in the last ${span}.`}
        lines={[
          { name: "Peak in flight", values: pick((b) => b.peakInFlight), style: seriesStyle(2) },
        ]}
        formatValue={count}
        height={height}
      />
      <SmallChart
        window={series}
        title="Slots freed by TTL"
        summary={`${formatNumber(totals.ttlFreed)} slots freed by their TTL in the last ${span}: a holder stopped renewing its slot, most often because its process crashed or stalled.`}
        lines={[{ name: "Freed by TTL", values: pick((b) => b.ttlFreed), style: seriesStyle(6) }]}
        formatValue={count}
        height={height}
      />
      <ChartNumbers caption="The outbound budget's figures per minute">
        <thead>
          <tr>
            <th scope="col">Minute</th>
            <th scope="col">Calls</th>
            <th scope="col">Wait p50</th>
            <th scope="col">Wait p90</th>
            <th scope="col">Wait p99</th>
            <th scope="col">Hit maxWaitMs</th>
            <th scope="col">Aborted</th>
            <th scope="col">Peak in flight</th>
            <th scope="col">Freed by TTL</th>
          </tr>
        </thead>
        <tbody>
          {buckets.map((bucket) => (
            <tr key={bucket.startMs}>
              <th scope="row">
                <BucketTime atMs={bucket.startMs} isPartial={false} />
              </th>
              <td>{formatNumber(bucket.calls)}</td>
              <td>{formatWait(bucket.waitP50Ms)}</td>
              <td>{formatWait(bucket.waitP90Ms)}</td>
              <td>{formatWait(bucket.waitP99Ms)}</td>
              <td>{formatNumber(bucket.waitMaxed)}</td>
              <td>{formatNumber(bucket.waitAborted)}</td>
              <td>{formatNumber(bucket.peakInFlight)}</td>
              <td>{formatNumber(bucket.ttlFreed)}</td>
            </tr>
          ))}
        </tbody>
      </ChartNumbers>
    </div>
  );
}
