/**
 * The fleet's decisions without Redis for the fleet view: the `degraded-decisions` alert as the
 * worker and the overview's alerts compute it (the same counts, the same thresholds), or null.
 */
import { type DegradedDecisionAlert, detectDegradedDecisions } from "../alerts/alert-rules";
import { readDecisionMinutes } from "../alerts/evaluate-alerts";
import type { FleetDeps } from "../deps";

export async function readDegradedDecisionAlert(
  deps: FleetDeps,
): Promise<DegradedDecisionAlert | null> {
  const nowMs = deps.clock.nowMs();
  const minutes = await readDecisionMinutes(nowMs, deps);
  return detectDegradedDecisions(minutes, { nowMs })[0] ?? null;
}
