/**
 * The overview's alerts, as pure functions the console and the worker (which sends them to
 * webhooks) share:
 *
 * - A **rejection-rate change**: a scope whose rejection rate moved sharply against its own recent
 *   baseline. A change, not a level: a scope that always rejects 40% is working as configured,
 *   while one going from 2% to 100% is nearly always a configuration mistake. Volume minimums in
 *   both windows keep a handful of requests from raising it.
 * - An **incident override about to expire**: so its owner can extend it before the customer is
 *   cut back to the old limit.
 * - **Decisions made without Redis**: enforcers answered by their failure policies (open admits
 *   unmeasured, local admits a share) because Redis was down, timed out or the circuit breaker
 *   was open. Never silent: past a small share of the fleet's decisions, it alerts.
 *
 * Time is a parameter (`nowMs`); nothing here reads a clock.
 */

import { formatDurationMs } from "@limitplane/enforcer/policy";
import type { DecisionMinuteCounts } from "@limitplane/enforcer/publication";
import { formatPercent } from "../format-percent";
import { formatUtcClock } from "../format-words";
import {
  type CountTotals,
  compareCodeUnits,
  groupByScope,
  MINUTE_MS,
  type ScopeMinuteCount,
  sumRange,
} from "../metric-minute/minute-counts";

// ---------------------------------------------------------------------------------------------
// Rejection-rate change

export interface RejectionRateAlertOptions {
  /**
   * The evaluation instant. Both windows end at the start of the minute containing it: the
   * current minute is still being counted and would look like a drop in volume. If the roll-up
   * runs late, pass `nowMs` minus its lag so the newest minutes are complete.
   */
  nowMs: number;
  /**
   * Length of the recent window, whose rate is compared with the baseline's. Short enough to
   * react within minutes, long enough that one odd minute does not alert.
   * @default 300_000 (5 minutes)
   */
  recentWindowMs?: number;
  /**
   * Length of the baseline window, which ends where the recent window starts: the scope's own
   * recent normal.
   * @default 3_600_000 (1 hour)
   */
  baselineWindowMs?: number;
  /**
   * Fewest requests the recent window must hold; below it the verdict is `low-volume`.
   * @default 50
   */
  minRecentRequests?: number;
  /**
   * Fewest requests the baseline window must hold; below it (but above zero) the verdict is
   * `low-volume`, and with no requests at all it is `no-baseline`. Values below 1 count as 1.
   * @default 100
   */
  minBaselineRequests?: number;
  /**
   * Smallest change of rate that alerts, as a fraction (0.2 is 20 percentage points). Stops a
   * move from 0.1% to 0.5% (five times as much, but nobody is hurt) from alerting.
   * @default 0.2
   */
  minAbsoluteChange?: number;
  /**
   * Smallest relative change that alerts: the larger rate divided by the smaller must reach it
   * (a rate from 0 counts as infinitely larger). Stops a move from 50% to 75% (a busy scope
   * getting a little busier) from alerting.
   * @default 2
   */
  minRelativeChange?: number;
  /**
   * Whether a sharp drop alerts as well as a rise. A scope going from 90% to 0% rejected usually
   * means a limit was lifted or switched off by mistake.
   * @default true
   */
  alertOnDrop?: boolean;
}

/** Why a scope did or did not alert. */
export type RejectionRateVerdict =
  /** The rate changed sharply with enough volume on both sides. */
  | "alert"
  /** Enough volume, no sharp change. */
  | "steady"
  /** Too few requests in one window to judge. */
  | "low-volume"
  /** No requests at all in the baseline window: there is nothing to compare with. */
  | "no-baseline"
  /** A sharp drop, and drops are configured not to alert. */
  | "drop-ignored";

export interface WindowRate {
  readonly fromMs: number;
  readonly toMs: number;
  readonly requests: number;
  readonly rejected: number;
  /** `rejected / requests`; `null` when the window had no requests (never 0, never NaN). */
  readonly rate: number | null;
}

export interface ScopeRateEvaluation {
  readonly scope: string;
  readonly verdict: RejectionRateVerdict;
  readonly baseline: WindowRate;
  readonly recent: WindowRate;
  /** `recent.rate - baseline.rate`; `null` when either rate is. */
  readonly absoluteChange: number | null;
}

export interface RejectionRateAlert {
  readonly kind: "rejection-rate-change";
  /** Stable while the condition lasts, for de-duplicating deliveries: kind, scope, direction. */
  readonly key: string;
  readonly scope: string;
  readonly direction: "rise" | "drop";
  readonly baselineRate: number;
  readonly recentRate: number;
  /** Signed: positive for a rise. */
  readonly absoluteChange: number;
  readonly baselineRequests: number;
  readonly recentRequests: number;
  /** Where the recent window ends (the start of the minute containing `nowMs`). */
  readonly windowEndMs: number;
  /** One plain sentence, for the overview and for webhook text. */
  readonly message: string;
}

interface ResolvedRateOptions {
  readonly windowEndMs: number;
  readonly recentWindowMs: number;
  readonly baselineWindowMs: number;
  readonly minRecentRequests: number;
  readonly minBaselineRequests: number;
  readonly minAbsoluteChange: number;
  readonly minRelativeChange: number;
  readonly alertOnDrop: boolean;
}

/** The defaults of {@link RejectionRateAlertOptions}, for display and for tests. */
export const REJECTION_RATE_ALERT_DEFAULTS = {
  recentWindowMs: 5 * MINUTE_MS,
  baselineWindowMs: 60 * MINUTE_MS,
  minRecentRequests: 50,
  minBaselineRequests: 100,
  minAbsoluteChange: 0.2,
  minRelativeChange: 2,
  alertOnDrop: true,
} as const;

function resolveRateOptions(options: RejectionRateAlertOptions): ResolvedRateOptions {
  const d = REJECTION_RATE_ALERT_DEFAULTS;
  const resolved = {
    windowEndMs: Math.floor(options.nowMs / MINUTE_MS) * MINUTE_MS,
    recentWindowMs: options.recentWindowMs ?? d.recentWindowMs,
    baselineWindowMs: options.baselineWindowMs ?? d.baselineWindowMs,
    minRecentRequests: Math.max(1, options.minRecentRequests ?? d.minRecentRequests),
    minBaselineRequests: Math.max(1, options.minBaselineRequests ?? d.minBaselineRequests),
    minAbsoluteChange: options.minAbsoluteChange ?? d.minAbsoluteChange,
    minRelativeChange: options.minRelativeChange ?? d.minRelativeChange,
    alertOnDrop: options.alertOnDrop ?? d.alertOnDrop,
  };
  // Misconfiguration is a programmer's mistake: say which option, instead of never alerting.
  if (!Number.isFinite(options.nowMs)) throw new RangeError("nowMs must be a finite number");
  for (const name of ["recentWindowMs", "baselineWindowMs"] as const) {
    if (!(Number.isFinite(resolved[name]) && resolved[name] > 0)) {
      throw new RangeError(`${name} must be a positive number of milliseconds`);
    }
  }
  for (const name of ["minRecentRequests", "minBaselineRequests"] as const) {
    if (!Number.isFinite(resolved[name])) throw new RangeError(`${name} must be a finite number`);
  }
  if (!(resolved.minAbsoluteChange >= 0 && resolved.minAbsoluteChange <= 1)) {
    throw new RangeError("minAbsoluteChange must be a fraction from 0 to 1");
  }
  if (!(resolved.minRelativeChange >= 1)) {
    throw new RangeError("minRelativeChange must be at least 1");
  }
  return resolved;
}

function windowRate(totals: CountTotals, fromMs: number, toMs: number): WindowRate {
  return {
    fromMs,
    toMs,
    requests: totals.requests,
    rejected: totals.rejected,
    rate: totals.requests > 0 ? totals.rejected / totals.requests : null,
  };
}

/** Whether `larger` is at least `factor` times `smaller`, with anything above 0 infinitely above 0. */
function isRelativelyLarger(larger: number, smaller: number, factor: number): boolean {
  if (smaller === 0) return larger > 0;
  return larger / smaller >= factor;
}

function evaluateRows(
  scope: string,
  rows: readonly ScopeMinuteCount[],
  o: ResolvedRateOptions,
): ScopeRateEvaluation {
  const recentFromMs = o.windowEndMs - o.recentWindowMs;
  const baselineFromMs = recentFromMs - o.baselineWindowMs;
  const baseline = windowRate(
    sumRange(rows, baselineFromMs, recentFromMs),
    baselineFromMs,
    recentFromMs,
  );
  const recent = windowRate(
    sumRange(rows, recentFromMs, o.windowEndMs),
    recentFromMs,
    o.windowEndMs,
  );
  const absoluteChange =
    baseline.rate === null || recent.rate === null ? null : recent.rate - baseline.rate;
  const result = (verdict: RejectionRateVerdict): ScopeRateEvaluation => ({
    scope,
    verdict,
    baseline,
    recent,
    absoluteChange,
  });

  if (baseline.rate === null) return result("no-baseline");
  if (recent.rate === null || recent.requests < o.minRecentRequests) return result("low-volume");
  if (baseline.requests < o.minBaselineRequests) return result("low-volume");
  if (absoluteChange === null || Math.abs(absoluteChange) < o.minAbsoluteChange) {
    return result("steady");
  }
  const isRise = absoluteChange > 0;
  const isSharp = isRise
    ? isRelativelyLarger(recent.rate, baseline.rate, o.minRelativeChange)
    : isRelativelyLarger(baseline.rate, recent.rate, o.minRelativeChange);
  if (!isSharp) return result("steady");
  if (!isRise && !o.alertOnDrop) return result("drop-ignored");
  return result("alert");
}

/**
 * Judges every scope in `rows` (see {@link ScopeMinuteCount}) and says why each did or did not
 * alert, in scope order. Unusable rows (NaN or negative counts) are ignored; missing minutes are
 * minutes with no traffic.
 *
 * The algorithm: with `end` the start of the minute containing `nowMs`, the recent window is
 * `[end - recentWindowMs, end)` and the baseline `[end - recentWindowMs - baselineWindowMs,
 * end - recentWindowMs)`. Each window's rate is `rejected / requests`. A scope alerts when:
 * 1. the baseline had at least one request (else `no-baseline`: a scope that only just started
 *    receiving traffic has no normal to depart from),
 * 2. both windows hold their minimum volume (else `low-volume`),
 * 3. the rate moved by at least `minAbsoluteChange` and the larger rate is at least
 *    `minRelativeChange` times the smaller (else `steady`),
 * 4. it rose, or it dropped and `alertOnDrop` is set (else `drop-ignored`).
 *
 * @throws RangeError for options that can never make sense (a non-positive window, a relative
 *   change below 1): a configuration mistake, not something to alert on.
 */
export function evaluateRejectionRates(
  rows: readonly ScopeMinuteCount[],
  options: RejectionRateAlertOptions,
): ScopeRateEvaluation[] {
  const resolved = resolveRateOptions(options);
  return [...groupByScope(rows)].map(([scope, scopeRows]) =>
    evaluateRows(scope, scopeRows, resolved),
  );
}

/**
 * The alerts among {@link evaluateRejectionRates}'s verdicts, largest change first (then by scope),
 * each with a plain sentence. Same options, same defaults.
 */
export function detectRejectionRateAlerts(
  rows: readonly ScopeMinuteCount[],
  options: RejectionRateAlertOptions,
): RejectionRateAlert[] {
  const resolved = resolveRateOptions(options);
  const alerts: RejectionRateAlert[] = [];
  for (const evaluation of evaluateRejectionRates(rows, options)) {
    const { baseline, recent, absoluteChange } = evaluation;
    if (
      evaluation.verdict !== "alert" ||
      baseline.rate === null ||
      recent.rate === null ||
      absoluteChange === null
    ) {
      continue;
    }
    const direction = absoluteChange > 0 ? "rise" : "drop";
    alerts.push({
      kind: "rejection-rate-change",
      key: `rejection-rate-change:${evaluation.scope}:${direction}`,
      scope: evaluation.scope,
      direction,
      baselineRate: baseline.rate,
      recentRate: recent.rate,
      absoluteChange,
      baselineRequests: baseline.requests,
      recentRequests: recent.requests,
      windowEndMs: resolved.windowEndMs,
      message:
        `Rejections on ${evaluation.scope} ${direction === "rise" ? "rose" : "fell"} from ` +
        `${formatPercent(baseline.rate)} to ${formatPercent(recent.rate)} in the last ` +
        `${formatDurationMs(resolved.recentWindowMs)}, against the ` +
        `${formatDurationMs(resolved.baselineWindowMs)} before (${recent.requests} requests).`,
    });
  }
  return alerts.sort(
    (a, b) =>
      Math.abs(b.absoluteChange) - Math.abs(a.absoluteChange) || compareCodeUnits(a.scope, b.scope),
  );
}

// ---------------------------------------------------------------------------------------------
// Incident override about to expire

/** What the expiry alert needs of an incident override; `TIncidentOverride` fits. */
export interface IncidentForExpiry {
  readonly id: string;
  readonly customerId: string;
  /** `null` for all endpoints. */
  readonly endpointClass: string | null;
  /** ISO 8601 instant. An override that has not started yet does not alert. */
  readonly startsAt?: string;
  /** ISO 8601 instant at which it stops applying. */
  readonly expiresAt: string;
}

export interface IncidentExpiryAlertOptions {
  /** The evaluation instant. */
  nowMs: number;
  /**
   * How long before expiry to warn. Long enough to find the owner and decide whether to extend.
   * @default 900_000 (15 minutes)
   */
  warningWindowMs?: number;
}

export const INCIDENT_EXPIRY_ALERT_DEFAULTS = { warningWindowMs: 15 * MINUTE_MS } as const;

export interface IncidentExpiryAlert {
  readonly kind: "incident-expiring";
  /** Stable for one override: kind and incident id. */
  readonly key: string;
  readonly incidentId: string;
  /** `incident:ID`, as in the scope grammar. */
  readonly scope: string;
  readonly customerId: string;
  readonly endpointClass: string | null;
  readonly expiresAtMs: number;
  /** `expiresAtMs - nowMs`; always above 0 and at most the warning window. */
  readonly remainingMs: number;
  readonly message: string;
}

/**
 * Incident overrides in force at `nowMs` (started, `nowMs < expiresAt`) that expire within
 * `warningWindowMs`, soonest first (then by id). An expired, not-yet-started or unreadable-time
 * override never alerts.
 *
 * @throws RangeError when `nowMs` is not finite or `warningWindowMs` is not positive.
 */
export function detectExpiringIncidents(
  incidents: readonly IncidentForExpiry[],
  options: IncidentExpiryAlertOptions,
): IncidentExpiryAlert[] {
  const warningWindowMs = options.warningWindowMs ?? INCIDENT_EXPIRY_ALERT_DEFAULTS.warningWindowMs;
  if (!Number.isFinite(options.nowMs)) throw new RangeError("nowMs must be a finite number");
  if (!(Number.isFinite(warningWindowMs) && warningWindowMs > 0)) {
    throw new RangeError("warningWindowMs must be a positive number of milliseconds");
  }
  const alerts: IncidentExpiryAlert[] = [];
  for (const incident of incidents) {
    const expiresAtMs = Date.parse(incident.expiresAt);
    if (!Number.isFinite(expiresAtMs)) continue;
    if (incident.startsAt !== undefined) {
      const startsAtMs = Date.parse(incident.startsAt);
      if (!Number.isFinite(startsAtMs) || startsAtMs > options.nowMs) continue;
    }
    const remainingMs = expiresAtMs - options.nowMs;
    if (remainingMs <= 0 || remainingMs > warningWindowMs) continue;
    const where =
      incident.endpointClass === null
        ? "all endpoints"
        : `endpoint class ${incident.endpointClass}`;
    alerts.push({
      kind: "incident-expiring",
      key: `incident-expiring:${incident.id}`,
      incidentId: incident.id,
      scope: `incident:${incident.id}`,
      customerId: incident.customerId,
      endpointClass: incident.endpointClass,
      expiresAtMs,
      remainingMs,
      message:
        `The incident override for ${incident.customerId} (${where}) expires in ` +
        `${formatDurationMs(remainingMs)}; extend it or let the normal limit return.`,
    });
  }
  return alerts.sort(
    (a, b) => a.remainingMs - b.remainingMs || compareCodeUnits(a.incidentId, b.incidentId),
  );
}

// ---------------------------------------------------------------------------------------------
// Decisions made without Redis

/**
 * The fleet's decisions in one minute and how many were made without Redis, by why, as the
 * enforcers' per-minute hashes hold them (`readDecisionMinute` of the publication protocol).
 */
export type DecisionMinute = DecisionMinuteCounts;

export interface DegradedDecisionAlertOptions {
  /**
   * The evaluation instant. The window is the minute before the one containing it plus that
   * minute so far: an outage alerts within about a minute, and one odd second in a quiet minute
   * does not outweigh a whole busy one.
   */
  nowMs: number;
  /**
   * Fewest decisions without Redis in the window that alert: a handful during a Redis restart
   * is not worth waking anyone.
   * @default 10
   */
  minDecisionsWithoutStore?: number;
  /**
   * Smallest share of the window's decisions made without Redis that alerts, as a fraction.
   * @default 0.01 (1 %)
   */
  minShare?: number;
}

export const DEGRADED_DECISION_ALERT_DEFAULTS = {
  minDecisionsWithoutStore: 10,
  minShare: 0.01,
} as const;

export interface DegradedDecisionAlert {
  readonly kind: "degraded-decisions";
  /** One per fleet while the condition lasts. */
  readonly key: "degraded-decisions";
  /** Where the window starts (the start of the previous minute) and ends (`nowMs`). */
  readonly fromMs: number;
  readonly toMs: number;
  readonly decisions: number;
  readonly withoutStore: DecisionMinute["withoutStore"];
  /** Decisions without Redis in the window, in all. */
  readonly decisionsWithoutStore: number;
  /** `decisionsWithoutStore / decisions`. */
  readonly share: number;
  readonly message: string;
}

/**
 * An alert when, over the previous minute and the current one so far, at least
 * `minDecisionsWithoutStore` decisions (10) and at least `minShare` of all decisions (1 %) were
 * made without Redis: each by its limits' failure policies, so tier limits admitted without
 * counting and ceilings admitted a per-gateway share. Minutes outside the window are ignored; no
 * minutes means no alert.
 *
 * @throws RangeError when `nowMs` is not finite, the minimum is below 1 or the share is not a
 *   fraction in (0, 1].
 */
export function detectDegradedDecisions(
  minutes: readonly DecisionMinute[],
  options: DegradedDecisionAlertOptions,
): DegradedDecisionAlert[] {
  const d = DEGRADED_DECISION_ALERT_DEFAULTS;
  const minCount = options.minDecisionsWithoutStore ?? d.minDecisionsWithoutStore;
  const minShare = options.minShare ?? d.minShare;
  if (!Number.isFinite(options.nowMs)) throw new RangeError("nowMs must be a finite number");
  if (!(minCount >= 1)) throw new RangeError("minDecisionsWithoutStore must be at least 1");
  if (!(minShare > 0 && minShare <= 1)) throw new RangeError("minShare must be in (0, 1]");
  const fromMs = Math.floor(options.nowMs / MINUTE_MS) * MINUTE_MS - MINUTE_MS;
  let decisions = 0;
  const withoutStore = { storeError: 0, timeout: 0, circuitOpen: 0 };
  for (const minute of minutes) {
    if (minute.minuteStartMs < fromMs || minute.minuteStartMs > options.nowMs) continue;
    decisions += validCount(minute.decisions);
    withoutStore.storeError += validCount(minute.withoutStore.storeError);
    withoutStore.timeout += validCount(minute.withoutStore.timeout);
    withoutStore.circuitOpen += validCount(minute.withoutStore.circuitOpen);
  }
  const total = withoutStore.storeError + withoutStore.timeout + withoutStore.circuitOpen;
  if (total < minCount || decisions === 0) return [];
  const share = Math.min(1, total / decisions);
  if (share < minShare) return [];
  const reasons = [
    withoutStore.storeError > 0 ? `${withoutStore.storeError} with Redis down or refusing` : null,
    withoutStore.timeout > 0 ? `${withoutStore.timeout} timed out` : null,
    withoutStore.circuitOpen > 0 ? `${withoutStore.circuitOpen} with the circuit open` : null,
  ].filter((reason) => reason !== null);
  return [
    {
      kind: "degraded-decisions",
      key: "degraded-decisions",
      fromMs,
      toMs: options.nowMs,
      decisions,
      withoutStore,
      decisionsWithoutStore: total,
      share,
      message:
        `${total} of ${decisions} decisions (${formatPercent(share)}) since ` +
        `${formatUtcClock(fromMs)} were made without Redis ` +
        `(${reasons.join(", ")}): their limits' failure policies decided (open admits unmeasured). ` +
        "Check Redis and the gateways' connections.",
    },
  ];
}

function validCount(value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0;
}

/** Every alert the overview shows. */
export type ConsoleAlert =
  | RejectionRateAlert
  | IncidentExpiryAlert
  | DegradedDecisionAlert
  | StagedChangeAlert
  | NoPolicyAlert;

// ---------------------------------------------------------------------------------------------
// Gateways without a policy

/**
 * How long a gateway may run without a policy before it alerts: longer than a start-up's first
 * snapshot takes (the enforcer waits up to 5 s for it, and the worker republishes within one
 * 5 s poll after Redis was emptied), short enough that an empty Redis or a wrong key prefix is
 * heard about within a minute, at the worker's next alert run.
 */
export const NO_POLICY_ALERT_AFTER_MS = 30_000;

/** What the no-policy alert reads of a gateway's heartbeat. */
export interface GatewayPolicyFacts {
  readonly id: string;
  readonly noPolicy: {
    readonly sinceMs: number | null;
    readonly action: "admit" | "reject";
    readonly decisions: number;
  } | null;
}

export interface NoPolicyAlert {
  readonly kind: "no-policy";
  /** One episode while any gateway runs none. */
  readonly key: "no-policy";
  readonly enforcerIds: readonly string[];
  /** Requests those gateways decided without a policy since they started. */
  readonly decisions: number;
  readonly message: string;
}

/**
 * One alert when any gateway has run without a policy for `afterMs` or longer (its heartbeat
 * says `policy: none`): it admits every request unchecked, or refuses them all, by its
 * `withoutPolicy` option.
 */
export function detectNoPolicyGateways(
  gateways: readonly GatewayPolicyFacts[],
  options: { readonly nowMs: number; readonly afterMs?: number },
): NoPolicyAlert[] {
  const afterMs = options.afterMs ?? NO_POLICY_ALERT_AFTER_MS;
  const without = gateways.filter(
    (gateway) =>
      gateway.noPolicy !== null &&
      (gateway.noPolicy.sinceMs === null || options.nowMs - gateway.noPolicy.sinceMs >= afterMs),
  );
  if (without.length === 0) return [];
  const ids = without.map((gateway) => gateway.id).sort(compareCodeUnits);
  const decisions = without.reduce((sum, gateway) => sum + (gateway.noPolicy?.decisions ?? 0), 0);
  const admitting = without.filter((gateway) => gateway.noPolicy?.action !== "reject").length;
  const what =
    admitting === without.length
      ? "admitting every request unchecked"
      : admitting === 0
        ? "refusing every request (503)"
        : `${admitting} admitting every request unchecked, the rest refusing them`;
  const names =
    ids.length > 5 ? `${ids.slice(0, 5).join(", ")} and ${ids.length - 5} more` : ids.join(", ");
  return [
    {
      kind: "no-policy",
      key: "no-policy",
      enforcerIds: ids,
      decisions,
      message:
        `${ids.length === 1 ? "1 gateway has" : `${ids.length} gateways have`} run no policy for ` +
        `${formatDurationMs(afterMs)} or more (${names}), ${what}: ${decisions} requests so far. ` +
        "Check their Redis URL and key prefix against the console's, and that the worker runs.",
    },
  ];
}

/** What the staged-change alerts read of a staged change. */
export interface StagedChangeForAlert {
  readonly id: string;
  readonly target: string;
  readonly state: string;
  readonly endReason: string | null;
  readonly endFigures: unknown;
  readonly endedAt: string | null;
  readonly holdNotifiedAt: string | null;
  readonly stepIndex: number;
}

/** How long a guard's revert stays an alert (and so reaches the webhooks). */
export const STAGED_CHANGE_REVERT_ALERT_MS = 15 * MINUTE_MS;

export interface StagedChangeAlert {
  readonly kind: "staged-change";
  /** Reverted by its guard, or holding a step for traffic. */
  readonly event: "reverted" | "holding";
  readonly key: string;
  readonly stagedChangeId: string;
  readonly target: string;
  /** A revert's windows (slice and rest requests and rejections); null for a hold. */
  readonly figures: unknown;
  readonly message: string;
}

/**
 * An alert for each staged change its guard reverted in the last 15 minutes (with the figures
 * that tripped it), and for each live one whose step has waited three dwell times for traffic.
 */
export function detectStagedChangeAlerts(
  changes: readonly StagedChangeForAlert[],
  options: { readonly nowMs: number },
): StagedChangeAlert[] {
  const alerts: StagedChangeAlert[] = [];
  for (const change of changes) {
    if (change.state === "reverted" && change.endedAt !== null) {
      if (options.nowMs - Date.parse(change.endedAt) > STAGED_CHANGE_REVERT_ALERT_MS) continue;
      alerts.push({
        kind: "staged-change",
        event: "reverted",
        key: `staged-change-reverted:${change.id}`,
        stagedChangeId: change.id,
        target: change.target,
        figures: change.endFigures,
        message: `Staged change ${change.id} of ${change.target} ${change.endReason ?? "was reverted by its guard"}`,
      });
    } else if (
      (change.state === "running" || change.state === "paused") &&
      change.holdNotifiedAt !== null
    ) {
      alerts.push({
        kind: "staged-change",
        event: "holding",
        key: `staged-change-holding:${change.id}:${change.stepIndex}`,
        stagedChangeId: change.id,
        target: change.target,
        figures: null,
        message: `Staged change ${change.id} of ${change.target} is holding at step ${change.stepIndex + 1}: its slice has seen too few requests to judge; advance or abort it.`,
      });
    }
  }
  return alerts;
}
