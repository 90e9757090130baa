import type { AuditedChangeDeps } from "@/lib/control/audit/run-audited-change";
import { expireChangeRequests } from "@/lib/control/change-request/expire-change-requests";
import type { WorkerJob } from "../worker-job";

export interface ExpireChangeRequestsJobOptions {
  readonly deps: AuditedChangeDeps;
  /** How often to look for requests past their expiry. @default 5000 */
  readonly intervalMs?: number;
  /** Told how many expired, when any did. */
  readonly onExpired?: (count: number) => void;
}

const BATCH = 100;

/** Marks each pending change request past its expiry `expired`, audited, with its webhook notice. */
export function expireChangeRequestsJob(options: ExpireChangeRequestsJobOptions): WorkerJob {
  const intervalMs = options.intervalMs ?? 5_000;
  return {
    name: "expire change requests",
    async run() {
      const expired = await expireChangeRequests(options.deps, { limit: BATCH });
      if (expired > 0) options.onExpired?.(expired);
      return { nextRunInMs: expired === BATCH ? 0 : intervalMs };
    },
  };
}
