import type { ControlDeps } from "@/lib/control/deps";
import { recordDescriptorRaiseExpiries } from "@/lib/control/descriptor-rule/record-descriptor-raise-expiries";
import { recordIncidentExpiries } from "@/lib/control/incident/record-incident-expiries";
import { recordOutboundRaiseExpiries } from "@/lib/control/outbound-budget/record-outbound-raise-expiries";
import type { WorkerJob } from "../worker-job";

export interface RecordIncidentExpiriesJobOptions {
  readonly deps: ControlDeps;
  /** How often to look for expiries to record. @default 5000 */
  readonly intervalMs?: number;
  /**
   * Told of every expiry recorded: incident ids, `<rule id>/<raise id>` for raises of descriptor
   * values, and `outbound:<name>` for raises of outbound budgets.
   */
  readonly onRecorded?: (ids: readonly string[]) => void;
}

const BATCH = 100;

/**
 * Writes the `incident.expire` audit entry of each incident that reached its expiry, and the
 * `descriptor-rule.expire-raise` entry of each raise of one descriptor value that did, and the
 * `outbound-budget.expire-raise` entry of each raised outbound budget that did. Not urgent:
 * enforcers and services already stopped applying them at that instant by their own clock.
 */
export function recordIncidentExpiriesJob(options: RecordIncidentExpiriesJobOptions): WorkerJob {
  const intervalMs = options.intervalMs ?? 5_000;
  return {
    name: "record incident expiries",
    async run() {
      const incidents = await recordIncidentExpiries(options.deps, { limit: BATCH });
      const raises = await recordDescriptorRaiseExpiries(options.deps, { limit: BATCH });
      const budgets = await recordOutboundRaiseExpiries(options.deps, { limit: BATCH });
      const recorded = [
        ...incidents,
        ...raises.map((raise) => `${raise.ruleId}/${raise.raiseId}`),
        ...budgets.map((name) => `outbound:${name}`),
      ];
      if (recorded.length > 0) options.onRecorded?.(recorded);
      const isFull =
        incidents.length === BATCH || raises.length === BATCH || budgets.length === BATCH;
      return { nextRunInMs: isFull ? 0 : intervalMs };
    },
  };
}
