/**
 * The alerts the overview shows and the worker sends to webhooks, evaluated one way for both:
 * decisions made without Redis across the fleet (`detectDegradedDecisions`, from the enforcers'
 * live per-minute counts in Redis), rejection-rate changes against each scope's own baseline
 * (`detectRejectionRateAlerts`) over the per-minute counts, and incident overrides about to expire
 * (`detectExpiringIncidents`), and gateways that run no policy (`detectNoPolicyGateways`, from
 * their heartbeats).
 */
import {
  type DecisionMinuteCounts,
  type EnforcerHeartbeat,
  readDecisionMinute,
  readEnforcerHeartbeats,
} from "@limitplane/enforcer/publication";
import type { FleetDeps, ReadDeps } from "../deps";
import { listIncidents } from "../incident/list-incidents";
import { loadScopeMinutes } from "../metric-minute/load-scope-minutes";
import { listStagedChanges } from "../staged-change/list-staged-changes";
import {
  type ConsoleAlert,
  detectDegradedDecisions,
  detectExpiringIncidents,
  detectNoPolicyGateways,
  detectRejectionRateAlerts,
  detectStagedChangeAlerts,
  REJECTION_RATE_ALERT_DEFAULTS,
} from "./alert-rules";

export interface EvaluatedAlerts {
  /**
   * Decisions without Redis first, then rate changes (largest change first), then expiring
   * overrides (soonest first).
   */
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
  const [minutes, incidents, decisionMinutes, stagedChanges, heartbeats] = await Promise.all([
    loadScopeMinutes({ fromMs, nowMs: options.nowMs }, deps),
    // Current as of the evaluation instant, like everything else here.
    listIncidents({ status: "current" }, { db: deps.db, clock: { nowMs: () => options.nowMs } }),
    deps.live === null ? [] : readDecisionMinutes(options.nowMs, deps.live),
    listStagedChanges(deps, { states: ["running", "paused", "reverted"], limit: 50 }),
    deps.live === null ? [] : readHeartbeats(deps.live),
  ]);
  // Both windows end at the start of the current minute, so it does not matter whether the
  // current minute came from Redis: only complete minutes are judged.
  const rateAlerts = detectRejectionRateAlerts(minutes.rows, { nowMs: options.nowMs });
  const expiring = detectExpiringIncidents(incidents, { nowMs: options.nowMs });
  const degraded = detectDegradedDecisions(decisionMinutes, { nowMs: options.nowMs });
  const staged = detectStagedChangeAlerts(stagedChanges, { nowMs: options.nowMs });
  const noPolicy = detectNoPolicyGateways(heartbeats, { nowMs: options.nowMs });
  return {
    alerts: [...noPolicy, ...degraded, ...staged, ...rateAlerts, ...expiring],
    nowMs: options.nowMs,
  };
}

/** Most gateways the no-policy alert looks at (as many as the fleet view lists). */
const MAX_GATEWAYS = 200;

/** The gateways' heartbeats; none when Redis does not answer (nothing to say about them then). */
async function readHeartbeats(
  live: Pick<FleetDeps, "redis" | "prefix">,
): Promise<readonly EnforcerHeartbeat[]> {
  try {
    return (await readEnforcerHeartbeats(live.redis, live.prefix, MAX_GATEWAYS)).heartbeats;
  } catch (error: unknown) {
    console.warn("alerts: the gateways' heartbeats could not be read", error);
    return [];
  }
}

/**
 * The previous minute's and the current minute's decision counts, straight from the enforcers'
 * Redis hashes (these counts are not rolled up into Postgres). Redis unreachable is not an error
 * here: no counts, no alert (the enforcers cannot flush to it either; their counts wait in
 * process and arrive with Redis).
 */
export async function readDecisionMinutes(
  nowMs: number,
  live: Pick<FleetDeps, "redis" | "prefix">,
): Promise<DecisionMinuteCounts[]> {
  const current = Math.floor(nowMs / 60_000);
  try {
    return await Promise.all(
      [current - 1, current].map((minute) => readDecisionMinute(live.redis, live.prefix, minute)),
    );
  } catch (error: unknown) {
    console.warn("alerts: the live decision counts could not be read", error);
    return [];
  }
}
