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
import { formatPercent } from "@/lib/console/format";
import type { StagedChartData } from "@/lib/console/staged-chart";
import { Badge } from "../ui/badge";
import { LocalTime } from "../ui/local-time";
import { MARKER_COLORS } from "./chart-theme";
import { MarkerOverlay } from "./marker-overlay";
import {
  BucketTime,
  ChartCanvas,
  ChartNumbers,
  PartialBucketNote,
  RIGHT_MARGIN_PX,
  Swatch,
  seriesLines,
  timeTooltipProps,
  timeXAxis,
  Y_AXIS_WIDTH_PX,
} from "./time-chart";

const SLICE_STYLE = { stroke: "#b42318", dash: "" } as const;
const REST_STYLE = { stroke: "#1d4ed8", dash: "6 3" } as const;

/**
 * The slice's rejection rate (under the new limit) against the rest's (under the old one), minute
 * by minute, with each step's start and every other verb marked. A minute without a request on a
 * side is a gap, not a zero. Every number is also in the table under it.
 */
export function StagedChangeChart({
  data,
  height = 220,
}: {
  data: StagedChartData;
  height?: number;
}) {
  const titleId = useId();
  const partialIndex = partialBucketIndex(data);
  const rows = data.rows;
  return (
    <figure className="chart-pair" aria-labelledby={titleId} data-testid="staged-chart">
      <figcaption id={titleId}>
        <strong>Rejection rate: slice against the rest</strong>
      </figcaption>
      <ChartCanvas height={height} label="Drawing the slice against the rest">
        {(widthPx) => (
          <>
            <ResponsiveContainer width="100%" height="100%">
              <LineChart
                data={[...rows]}
                margin={{
                  top: data.markers.length > 0 ? 24 : 8,
                  right: RIGHT_MARGIN_PX,
                  bottom: 0,
                  left: 0,
                }}
              >
                <CartesianGrid stroke="#e6e9ee" vertical={false} />
                {timeXAxis(data)}
                <YAxis
                  domain={[0, 1]}
                  tickFormatter={(value: number) => formatPercent(value)}
                  width={Y_AXIS_WIDTH_PX}
                  tick={{ fontSize: 12 }}
                />
                <Tooltip {...timeTooltipProps(data, formatPercent)} />
                {data.markers.map((marker) => (
                  <ReferenceLine
                    key={marker.auditEntryId}
                    x={marker.atMs}
                    stroke={MARKER_COLORS[marker.kind]}
                    strokeDasharray="3 3"
                    ifOverflow="discard"
                  />
                ))}
                {seriesLines({
                  name: "Slice (new limit)",
                  values: rows.map((row) => row.values[0] ?? null),
                  style: SLICE_STYLE,
                  partialIndex,
                })}
                {seriesLines({
                  name: "Rest (old limit)",
                  values: rows.map((row) => row.values[1] ?? null),
                  style: REST_STYLE,
                  partialIndex,
                })}
              </LineChart>
            </ResponsiveContainer>
            <MarkerOverlay markers={data.markers} window={data} widthPx={widthPx} />
          </>
        )}
      </ChartCanvas>
      <ul className="chart-legend" aria-label="Lines">
        <li>
          <Swatch style={SLICE_STYLE} /> Slice, under the new limit
        </li>
        <li>
          <Swatch style={REST_STYLE} /> Rest, under the old limit
        </li>
        {partialIndex >= 0 ? <PartialBucketNote bucketMs={data.bucketMs} /> : null}
      </ul>
      {data.markers.length > 0 ? (
        <ol
          className="chart-markers"
          aria-label="Marked on the chart"
          data-testid="staged-chart-markers"
        >
          {data.markers.map((marker) => (
            <li key={marker.auditEntryId}>
              <Badge tone="info">staged</Badge> <LocalTime at={marker.atMs} short />{" "}
              <a href={marker.href}>{marker.label}</a>
            </li>
          ))}
        </ol>
      ) : null}
      <ChartNumbers caption="Requests and rejections of the slice and the rest per minute">
        <thead>
          <tr>
            <th scope="col">Minute</th>
            <th scope="col">Slice rejected</th>
            <th scope="col">Rest rejected</th>
          </tr>
        </thead>
        <tbody>
          {rows
            .filter((row) => row.counts !== null)
            .map((row) => {
              const count = row.counts;
              return (
                <tr key={row.startMs}>
                  <th scope="row">
                    <BucketTime atMs={row.startMs} isPartial={row.index === partialIndex} />
                  </th>
                  <td>
                    {row.values[0] == null ? "no requests" : formatPercent(row.values[0])} (
                    {count?.sliceRejected ?? 0}/{count?.sliceRequests ?? 0})
                  </td>
                  <td>
                    {row.values[1] == null ? "no requests" : formatPercent(row.values[1])} (
                    {count?.restRejected ?? 0}/{count?.restRequests ?? 0})
                  </td>
                </tr>
              );
            })}
        </tbody>
      </ChartNumbers>
    </figure>
  );
}
