/**
 * The enforcer's vocabulary on top of the limiter core's: a check that says what to do when the
 * store fails, and a decision that says where it came from and whether it was degraded.
 *
 * An `EnforcerDecision` has the core's `LayeredDecision` shape (a `LayeredDecision` converts with
 * {@link fromStoreDecision}) plus three fields, and widens `reason` with `store-unavailable`, so
 * headers, metrics and logs handle store answers, local-stage answers and fallbacks alike.
 */
import { bindingOutcome, combineAnswers, UNLIMITED } from "../limiter/layered";
import { setStoreTime, storeTimeOf } from "../limiter/stores/store-time";
import type { LayeredDecision, LimitCheck, LimitOutcome, RejectReason } from "../limiter/types";
import type { TOnStoreFailure } from "../policy/schemas";

/** What a limit does when the shared store is slow or unreachable (the policy's `onStoreFailure`). */
export type StoreFailurePolicy = TOnStoreFailure;

/**
 * A limit as the enforcer checks it: the core's check plus its failure policy. The policy's
 * `ResolvedCheck` satisfies it.
 */
export interface EnforcerCheck extends LimitCheck {
  readonly onStoreFailure: StoreFailurePolicy;
}

/** One request to the enforcer: the subject and the checks the policy resolved for it. */
export interface EnforcerInput {
  readonly subject: string;
  readonly checks: readonly EnforcerCheck[];
  /** Units of cost this request spends on every enforced limit. @default 1 */
  readonly cost?: number;
}

/**
 * Why the shared store gave no answer. A closed set: metrics count each.
 * - `timeout`: the call did not settle within the timeout and was abandoned.
 * - `store-error`: the call failed (connection refused, script error, ...).
 * - `circuit-open`: the circuit breaker answered without calling the store.
 */
export type StoreFailure = "timeout" | "store-error" | "circuit-open";

export const STORE_FAILURES: readonly StoreFailure[] = ["timeout", "store-error", "circuit-open"];

/**
 * The core's reasons plus `store-unavailable`: a `closed` limit rejected because the store could
 * not be asked. Closed set.
 */
export type EnforcerRejectReason = RejectReason | "store-unavailable";

/**
 * Who answered.
 * - `store`: the shared store (the authority).
 * - `fallback`: the failure policy, because the store failed (`degraded` is true).
 * - `denial-cache`: the local stage's cache of a recent shared rejection (rejections only).
 * - `flood-guard`: the local stage's generous in-process limiter (rejections only).
 * - `lease`: a lease this gateway holds, units the shared store reserved for it (admissions
 *   only; see `lease-table.ts`).
 * - `no-policy`: nothing decided: the enforcer had no policy snapshot yet, so there was no limit
 *   to check (admissions only; see the runtime's startup rules).
 * - `rule`: the policy alone: a rule that admits nothing (a descriptor rule's `deny`), answered
 *   without a store call (rejections, or would-rejects in dry-run).
 */
export type DecisionSource =
  | "store"
  | "fallback"
  | "denial-cache"
  | "flood-guard"
  | "lease"
  | "no-policy"
  | "rule";

export const DECISION_SOURCES: readonly DecisionSource[] = [
  "store",
  "fallback",
  "denial-cache",
  "flood-guard",
  "lease",
  "no-policy",
  "rule",
];

/** One limit's outcome within an {@link EnforcerDecision}. */
export interface EnforcerOutcome extends Omit<LimitOutcome, "reason"> {
  readonly reason: EnforcerRejectReason | null;
  /**
   * The failure policy that decided this limit because the store failed; null when it was
   * evaluated normally. An `open` outcome was not evaluated at all: its `remaining` is the
   * limit's size, which is not a measurement.
   */
  readonly fallback: StoreFailurePolicy | null;
}

/**
 * A layered decision as the enforcer returns it. Same semantics as the core's: admitted only if
 * every enforced limit admits; the top-level fields describe the binding limit. One difference: a
 * degraded decision whose enforced limits were all admitted unevaluated (`open`) has `scope: null`
 * and `UNLIMITED`, as if no limit bound, because nothing was measured.
 */
export interface EnforcerDecision extends Omit<LayeredDecision, "reason" | "outcomes"> {
  readonly reason: EnforcerRejectReason | null;
  readonly outcomes: readonly EnforcerOutcome[];
  readonly source: DecisionSource;
  /** True exactly when the store failed and the failure policy decided (`source: "fallback"`). */
  readonly degraded: boolean;
  /** Which failure, when degraded; null otherwise. */
  readonly failure: StoreFailure | null;
}

/** A store's decision as an enforcer decision: not degraded, every outcome evaluated. */
export function fromStoreDecision(decision: LayeredDecision): EnforcerDecision {
  const converted: EnforcerDecision = {
    allowed: decision.allowed,
    limit: decision.limit,
    remaining: decision.remaining,
    retryAfterMs: decision.retryAfterMs,
    resetAfterMs: decision.resetAfterMs,
    reason: decision.reason,
    scope: decision.scope,
    outcomes: decision.outcomes.map((outcome) => ({ ...outcome, fallback: null })),
    source: "store",
    degraded: false,
    failure: null,
  };
  const storeTime = storeTimeOf(decision);
  if (storeTime !== undefined) setStoreTime(converted, storeTime);
  return converted;
}

/**
 * An enforcer decision from its outcomes, combined by the core's one rule (`combineAnswers` and
 * `bindingOutcome` in `limiter/layered.ts`, as `combineOutcomes` combines), with where it came
 * from. `isMeasured` false leaves an outcome out of the choice of binding limit (fail-open
 * outcomes, which measured nothing). Built as one object: no intermediate decision is made (this
 * runs for every cached denial and lease).
 */
export function enforcerDecisionOf(
  outcomes: readonly EnforcerOutcome[],
  provenance: Pick<EnforcerDecision, "source" | "degraded" | "failure">,
  isMeasured?: (outcome: EnforcerOutcome) => boolean,
): EnforcerDecision {
  const allowed = combineAnswers(outcomes.length, outcomes, outcomes, null);
  const binding = bindingOutcome(outcomes, allowed, isMeasured);
  if (binding === undefined) {
    return {
      allowed,
      limit: UNLIMITED,
      remaining: UNLIMITED,
      retryAfterMs: 0,
      resetAfterMs: 0,
      reason: null,
      scope: null,
      outcomes,
      source: provenance.source,
      degraded: provenance.degraded,
      failure: provenance.failure,
    };
  }
  return {
    allowed,
    limit: binding.limit,
    remaining: binding.remaining,
    retryAfterMs: binding.retryAfterMs,
    resetAfterMs: binding.resetAfterMs,
    reason: binding.reason,
    scope: binding.scope,
    outcomes,
    source: provenance.source,
    degraded: provenance.degraded,
    failure: provenance.failure,
  };
}
