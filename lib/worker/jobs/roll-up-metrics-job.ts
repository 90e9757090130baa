import {
  type MetricsRollupDeps,
  type MetricsRollupResult,
  rollUpMetricMinutes,
} from "@/lib/control/metric-minute/roll-up-metric-minutes";
import type { WorkerJob } from "../worker-job";

export interface RollUpMetricsJobOptions {
  readonly deps: MetricsRollupDeps;
  /** Days of rows kept. METRICS_RETENTION_DAYS. */
  readonly retentionDays: number;
  /** How often it runs. @default 15_000 */
  readonly intervalMs?: number;
  /** Told of every run, for logs and tests. */
  readonly onRolledUp?: (result: MetricsRollupResult) => void;
}

/**
 * Rolls the enforcers' per-scope counts up into Postgres per minute (`MetricMinute`), and the
 * outbound limiters' per-budget figures (`OutboundMinute`), and deletes rows past the retention. Safe to repeat and to run on a new leader: every run rewrites the
 * minutes it reads with their current totals.
 */
export function rollUpMetricsJob(options: RollUpMetricsJobOptions): WorkerJob {
  const intervalMs = options.intervalMs ?? 15_000;
  let readThroughMinute: number | null = null;
  return {
    name: "roll up metrics",
    async run() {
      const result = await rollUpMetricMinutes(options.deps, {
        retentionDays: options.retentionDays,
        readThroughMinute,
      });
      readThroughMinute = result.readThroughMinute;
      options.onRolledUp?.(result);
      return { nextRunInMs: result.hasMore ? 0 : intervalMs };
    },
  };
}
