"use client";

import { useId } from "react";
import {
  CartesianGrid,
  Line,
  LineChart,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from "recharts";
// Direct module imports, not the lib/console entry point: this is client code.
import {
  type ChartRow,
  type DryRunChartData,
  type DryRunSeries,
  isChartRow,
  timeTicks,
  toDryRunChartRows,
} from "@/lib/console/chart-series";
import {
  formatCompactNumber,
  formatDurationMs,
  formatNumber,
  formatPercent,
  formatTimeSpan,
  formatTimeTick,
} from "@/lib/console/format";
import { EmptyState } from "../ui/empty-state";
import { LocalTime } from "../ui/local-time";
import { SkeletonChart } from "../ui/skeleton";
import { BLOCKED_STYLE, WOULD_BLOCK_STYLE } from "./chart-theme";
import { isolatedDot } from "./isolated-dot";
import { useIsMounted } from "./use-is-mounted";

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
  const isMounted = useIsMounted();
  const spanMs = data.endMs - data.startMs;
  const isLongSpan = spanMs > 12 * 60 * 60 * 1000;
  const hasTraffic = series.enforcedRequests > 0 || series.dryRunRequests > 0;
  const rows = toDryRunChartRows(data, seriesIndex);

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
        <EmptyState title="No traffic yet">
          Neither scope evaluated a request in the {formatDurationMs(spanMs)} shown.
        </EmptyState>
      ) : (
        <>
          <p className="chart-summary">
            Blocked {formatNumber(series.totalBlocked)} of {formatNumber(series.enforcedRequests)}{" "}
            requests ({formatPercent(series.blockedRate)}); would block{" "}
            {formatNumber(series.totalWouldBlock)} of {formatNumber(series.dryRunRequests)} (
            {formatPercent(series.wouldBlockRate)}).
          </p>
          {isMounted ? (
            <div className="chart-canvas" style={{ height }}>
              <ResponsiveContainer width="100%" height="100%">
                <LineChart data={rows} margin={{ top: 8, right: 12, bottom: 0, left: 0 }}>
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
                    allowDecimals={false}
                    tickFormatter={(value: number) => formatCompactNumber(value)}
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
                      typeof value === "number" ? formatNumber(value) : "no traffic"
                    }
                  />
                  <Line
                    name="Blocked"
                    type="linear"
                    dataKey={(row: ChartRow) => row.values[0] ?? null}
                    stroke={BLOCKED_STYLE.stroke}
                    strokeDasharray={BLOCKED_STYLE.dash}
                    strokeWidth={2}
                    dot={isolatedDot(
                      rows.map((row) => row.values[0] ?? null),
                      BLOCKED_STYLE.stroke,
                    )}
                    connectNulls={false}
                    isAnimationActive={false}
                  />
                  <Line
                    name="Would block"
                    type="linear"
                    dataKey={(row: ChartRow) => row.values[1] ?? null}
                    stroke={WOULD_BLOCK_STYLE.stroke}
                    strokeDasharray={WOULD_BLOCK_STYLE.dash}
                    strokeWidth={2}
                    dot={isolatedDot(
                      rows.map((row) => row.values[1] ?? null),
                      WOULD_BLOCK_STYLE.stroke,
                    )}
                    connectNulls={false}
                    isAnimationActive={false}
                  />
                </LineChart>
              </ResponsiveContainer>
            </div>
          ) : (
            <SkeletonChart height={height} label={`Drawing ${series.label}`} />
          )}
          <ul className="chart-legend" aria-label="Lines">
            <li>
              <Swatch style={BLOCKED_STYLE} /> Blocked by <code>{series.enforcedScope}</code>
            </li>
            <li>
              <Swatch style={WOULD_BLOCK_STYLE} /> Would be blocked by{" "}
              <code>{series.dryRunScope}</code>
            </li>
          </ul>
          <details className="chart-table">
            <summary>Show the numbers</summary>
            <div className="table-scroll">
              <table className="data">
                <caption className="visually-hidden">
                  {series.label}: blocked and would-block requests per time
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Blocked</th>
                    <th scope="col">Would block</th>
                  </tr>
                </thead>
                <tbody>
                  {series.points.map((point) => (
                    <tr key={point.startMs}>
                      <th scope="row">
                        <LocalTime at={point.startMs} short />
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
              </table>
            </div>
          </details>
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

function Swatch({ style }: { style: { readonly stroke: string; readonly dash: string } }) {
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
