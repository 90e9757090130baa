/**
 * The alerts the overview shows and the worker sends to webhooks, evaluated one way for both:
 * rejection-rate changes against each scope's own baseline (`detectRejectionRateAlerts`) over the
 * per-minute counts, and incident overrides about to expire (`detectExpiringIncidents`).
 */
import {
  type ConsoleAlert,
  detectExpiringIncidents,
  detectRejectionRateAlerts,
  REJECTION_RATE_ALERT_DEFAULTS,
} from "@/lib/console/alerts";
import type { ReadDeps } from "../control-deps";
import type { FleetDeps } from "../fleet/fleet-deps";
import { listIncidents } from "../incident/list-incidents";
import { loadScopeMinutes } from "../metric-minute/load-scope-minutes";

export interface EvaluatedAlerts {
  /** Rate changes first (largest change first), then expiring overrides (soonest first). */
  readonly alerts: readonly ConsoleAlert[];
  /** The evaluation instant. */
  readonly nowMs: number;
}

export async function evaluateAlerts(
  options: { nowMs: number },
  deps: ReadDeps & { live: Pick<FleetDeps, "redis" | "prefix"> | null },
): Promise<EvaluatedAlerts> {
  const d = REJECTION_RATE_ALERT_DEFAULTS;
  const fromMs = options.nowMs - d.recentWindowMs - d.baselineWindowMs - 60_000;
  const [minutes, incidents] = await Promise.all([
    loadScopeMinutes({ fromMs, nowMs: options.nowMs }, deps),
    listIncidents({ status: "current" }, deps),
  ]);
  // Both windows end at the start of the current minute, so it does not matter whether the
  // current minute came from Redis: only complete minutes are judged.
  const rateAlerts = detectRejectionRateAlerts(minutes.rows, { nowMs: options.nowMs });
  const expiring = detectExpiringIncidents(incidents, { nowMs: options.nowMs });
  return { alerts: [...rateAlerts, ...expiring], nowMs: options.nowMs };
}
