"use client";

import { useId } from "react";
import { CartesianGrid, LineChart, ResponsiveContainer, Tooltip, YAxis } from "recharts";
import { formatCompactNumber, formatNumber } from "@/lib/console/format";
import { WOULD_BLOCK_STYLE } from "../charts/chart-theme";
import {
  BucketTime,
  ChartCanvas,
  ChartNumbers,
  RIGHT_MARGIN_PX,
  Swatch,
  seriesLines,
  timeTooltipProps,
  timeXAxis,
  Y_AXIS_WIDTH_PX,
} from "../charts/time-chart";
import styles from "./backtest.module.css";
import type { BacktestChartData } from "./backtest-words";

const NOW_STYLE = { stroke: "#2550c9", dash: "" } as const;
const DRAFT_STYLE = WOULD_BLOCK_STYLE;

type Measure = "Rejected" | "Admitted";

/**
 * Admitted and rejected per bucket, now (the policy in force, replayed) against the draft: two
 * small charts, and every number behind "Show the numbers".
 */
export function BacktestChart({
  data,
  height = 140,
}: {
  data: BacktestChartData;
  height?: number;
}) {
  const bucketWords =
    data.bucketMs === 60_000 ? "per minute" : `per ${Math.round(data.bucketMs / 60_000)} minutes`;
  return (
    <div>
      <div className={styles.charts}>
        <MeasureChart data={data} measure="Rejected" height={height} bucketWords={bucketWords} />
        <MeasureChart data={data} measure="Admitted" height={height} bucketWords={bucketWords} />
      </div>
      <ul className="chart-legend" aria-label="Lines">
        <li>
          <Swatch style={NOW_STYLE} /> Now (the policy in force, replayed)
        </li>
        <li>
          <Swatch style={DRAFT_STYLE} /> Under the draft
        </li>
      </ul>
      <ChartNumbers caption={`Admitted and rejected ${bucketWords}, now and under the draft`}>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Rejected now</th>
            <th scope="col">Rejected, draft</th>
            <th scope="col">Admitted now</th>
            <th scope="col">Admitted, draft</th>
          </tr>
        </thead>
        <tbody>
          {data.buckets
            .filter((bucket) => bucket.nowAdmitted + bucket.nowRejected > 0)
            .map((bucket) => (
              <tr key={bucket.startMs}>
                <th scope="row">
                  <BucketTime atMs={bucket.startMs} isPartial={false} />
                </th>
                <td>{formatNumber(Math.round(bucket.nowRejected))}</td>
                <td>{formatNumber(Math.round(bucket.draftRejected))}</td>
                <td>{formatNumber(Math.round(bucket.nowAdmitted))}</td>
                <td>{formatNumber(Math.round(bucket.draftAdmitted))}</td>
              </tr>
            ))}
        </tbody>
      </ChartNumbers>
    </div>
  );
}

function MeasureChart({
  data,
  measure,
  height,
  bucketWords,
}: {
  data: BacktestChartData;
  measure: Measure;
  height: number;
  bucketWords: string;
}) {
  const titleId = useId();
  const rows = data.buckets.map((bucket, index) => {
    const hasTraffic = bucket.nowAdmitted + bucket.nowRejected > 0;
    const now = measure === "Rejected" ? bucket.nowRejected : bucket.nowAdmitted;
    const draft = measure === "Rejected" ? bucket.draftRejected : bucket.draftAdmitted;
    return {
      index,
      startMs: bucket.startMs,
      endMs: bucket.startMs + data.bucketMs,
      xMs: bucket.startMs + data.bucketMs / 2,
      // A bucket without traffic is a gap, not a zero.
      values: hasTraffic ? [now, draft] : [null, null],
    };
  });
  return (
    <figure className={styles.chart} aria-labelledby={titleId}>
      <figcaption id={titleId} className="small">
        <strong>{measure}</strong> {bucketWords}
      </figcaption>
      <ChartCanvas height={height} label={`Drawing ${measure.toLowerCase()} requests`}>
        {() => (
          <ResponsiveContainer width="100%" height="100%">
            <LineChart data={rows} margin={{ top: 8, right: RIGHT_MARGIN_PX, bottom: 0, left: 0 }}>
              <CartesianGrid stroke="#e6e9ee" vertical={false} />
              {timeXAxis(data)}
              <YAxis
                allowDecimals={false}
                tickFormatter={(value: number) => formatCompactNumber(value)}
                width={Y_AXIS_WIDTH_PX}
                tick={{ fontSize: 12 }}
              />
              <Tooltip {...timeTooltipProps(data, (value) => formatNumber(Math.round(value)))} />
              {seriesLines({
                name: `${measure} now`,
                values: rows.map((row) => row.values[0] ?? null),
                style: NOW_STYLE,
                partialIndex: -1,
              })}
              {seriesLines({
                name: `${measure} under the draft`,
                values: rows.map((row) => row.values[1] ?? null),
                style: DRAFT_STYLE,
                partialIndex: -1,
              })}
            </LineChart>
          </ResponsiveContainer>
        )}
      </ChartCanvas>
    </figure>
  );
}
