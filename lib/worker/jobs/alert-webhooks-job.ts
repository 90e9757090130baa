import {
  type AlertWebhookDeps,
  type AlertWebhookOptions,
  type AlertWebhookOutcome,
  deliverAlertWebhooks,
} from "@/lib/control/alerts/deliver-alert-webhooks";
import type { WorkerJob } from "../worker-job";

export interface AlertWebhooksJobOptions extends AlertWebhookOptions {
  readonly deps: AlertWebhookDeps;
  /** How often alerts are evaluated. @default 60_000 */
  readonly intervalMs?: number;
  /** Told of every run, for logs and tests. */
  readonly onRun?: (outcome: AlertWebhookOutcome) => void;
}

/** Shortest wait between runs, so a retry due at once cannot spin. */
const MIN_WAIT_MS = 1_000;

/**
 * Evaluates the overview's alerts every minute and POSTs new ones to ALERT_WEBHOOK_URLS
 * (`deliverAlertWebhooks`); runs sooner when a retry falls due. With no URLs it does nothing.
 */
export function alertWebhooksJob(options: AlertWebhooksJobOptions): WorkerJob {
  const intervalMs = options.intervalMs ?? 60_000;
  return {
    name: "alert webhooks",
    async run() {
      if (options.urls.length === 0) return { nextRunInMs: intervalMs };
      const outcome = await deliverAlertWebhooks(options.deps, options);
      options.onRun?.(outcome);
      const untilRetryMs =
        outcome.nextAttemptAtMs === null
          ? intervalMs
          : outcome.nextAttemptAtMs - options.deps.clock.nowMs();
      return { nextRunInMs: Math.max(MIN_WAIT_MS, Math.min(intervalMs, untilRetryMs)) };
    },
  };
}
