import {
  type DeliverAuditWebhookDeps,
  type DeliverAuditWebhookOptions,
  type DeliverAuditWebhookOutcome,
  deliverAuditWebhook,
} from "@/lib/control/audit-webhook/deliver-audit-webhook";
import { OUTBOX_NOTIFY_CHANNEL } from "@/lib/control/outbox/outbox";
import type { WorkerJob } from "../worker-job";

export interface AuditWebhookJobOptions extends DeliverAuditWebhookOptions {
  readonly deps: DeliverAuditWebhookDeps;
  /** The safety-net poll when nothing wakes the job. @default 30_000 */
  readonly pollMs?: number;
  /** Told of every run that sent or failed, for logs and tests. */
  readonly onRun?: (outcome: DeliverAuditWebhookOutcome) => void;
}

/**
 * Sends every audit entry to the audit webhook (`deliverAuditWebhook`): at once when an entry
 * commits (the outbox's NOTIFY), at each retry's time while the receiver fails, and every
 * `pollMs` regardless. With no webhook set it reads one row and waits.
 */
export function auditWebhookJob(options: AuditWebhookJobOptions): WorkerJob {
  const pollMs = options.pollMs ?? 30_000;
  return {
    name: "audit webhook",
    wakeOn: [OUTBOX_NOTIFY_CHANNEL],
    async run() {
      const outcome = await deliverAuditWebhook(options.deps, options);
      if (outcome.delivered > 0 || outcome.failedAttempts > 0) options.onRun?.(outcome);
      if (outcome.hasMore) return { nextRunInMs: 0 };
      const untilRetryMs =
        outcome.nextAttemptAtMs === null
          ? pollMs
          : outcome.nextAttemptAtMs - options.deps.clock.nowMs();
      return { nextRunInMs: Math.max(0, Math.min(pollMs, untilRetryMs)) };
    },
  };
}
