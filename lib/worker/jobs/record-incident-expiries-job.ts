import type { ControlDeps } from "@/lib/control/deps";
import { recordIncidentExpiries } from "@/lib/control/incident/record-incident-expiries";
import type { WorkerJob } from "../worker-job";

export interface RecordIncidentExpiriesJobOptions {
  readonly deps: ControlDeps;
  /** How often to look for expiries to record. @default 5000 */
  readonly intervalMs?: number;
  /** Told of every expiry recorded. */
  readonly onRecorded?: (ids: readonly string[]) => void;
}

const BATCH = 100;

/**
 * Writes the `incident.expire` audit entry of each incident that reached its expiry. Not urgent:
 * enforcers already stopped applying it at that instant by their own clock.
 */
export function recordIncidentExpiriesJob(options: RecordIncidentExpiriesJobOptions): WorkerJob {
  const intervalMs = options.intervalMs ?? 5_000;
  return {
    name: "record incident expiries",
    async run() {
      const recorded = await recordIncidentExpiries(options.deps, { limit: BATCH });
      if (recorded.length > 0) options.onRecorded?.(recorded);
      return { nextRunInMs: recorded.length === BATCH ? 0 : intervalMs };
    },
  };
}
