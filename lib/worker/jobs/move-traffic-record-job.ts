import {
  type MoveTrafficRecordResult,
  moveTrafficRecord,
  type TrafficRecordMoverDeps,
} from "@/lib/control/backtest/move-traffic-record";
import type { WorkerJob } from "../worker-job";

export interface MoveTrafficRecordJobOptions {
  readonly deps: TrafficRecordMoverDeps;
  /** TRAFFIC_RECORD_RETENTION_HOURS. */
  readonly retentionHours: number;
  /** How often it runs. @default 5_000 */
  readonly intervalMs?: number;
  /** Told of every run, for logs and tests. */
  readonly onMoved?: (result: MoveTrafficRecordResult) => void;
}

/**
 * Moves the gateways' traffic record from their Redis Streams into Postgres, and prunes rows past
 * the retention. Safe to repeat and to run on a new leader: the stream cursor commits with the
 * rows it covers.
 */
export function moveTrafficRecordJob(options: MoveTrafficRecordJobOptions): WorkerJob {
  const intervalMs = options.intervalMs ?? 5_000;
  return {
    name: "move traffic record",
    async run() {
      const result = await moveTrafficRecord(options.deps, {
        retentionHours: options.retentionHours,
      });
      options.onMoved?.(result);
      return { nextRunInMs: result.hasMore ? 0 : intervalMs };
    },
  };
}
