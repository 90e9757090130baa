/**
 * What the enforcer answers when the shared store gave no answer (a timeout, an error, or an open
 * circuit), limit by limit, as each declares in `onStoreFailure`:
 *
 * - `open`: admit. The limit is not evaluated; its outcome says so (`fallback: "open"`).
 * - `closed`: reject with reason `store-unavailable` and a `retryAfterMs` hint. A timeout never
 *   silently admits a request a `closed` limit covers.
 * - `local`: evaluate a bounded local quota: the limit divided among the expected number of
 *   gateways ({@link localShareOf}), on an in-process `MemoryStore`.
 *
 * The per-limit answers combine as the core combines (`packages/enforcer/src/limiter/layered.ts`): the request is
 * admitted only if every enforced limit admits it, and a rejection consumes from none, so the local
 * quota is consumed only when the whole request is admitted. Every decision made here is
 * `degraded: true` with its `failure`, for metrics.
 *
 * Dry-run limits are never evaluated during a failure: they decide nothing, and a would-reject
 * counted against a local share would not be comparable with the shared limit's.
 */
import type { Clock } from "../limiter/clock";
import { monotonicClock } from "../limiter/clock";
import { bucketOf } from "../limiter/layered";
import { MemoryStore } from "../limiter/stores/memory";
import type { LimitCheck, LimitSpec } from "../limiter/types";
import { limitSize } from "../policy/limit-math";
import {
  type EnforcerCheck,
  type EnforcerDecision,
  type EnforcerInput,
  type EnforcerOutcome,
  enforcerDecisionOf,
  type StoreFailure,
} from "./types";

/**
 * One gateway's share of `spec` while the store is down: size and rate divided by
 * `expectedGateways`, so that the gateways together admit about what the shared limit would (the
 * seed's "split the quota" repair, used only while the shared state is unreachable).
 *
 * - Token bucket: capacity ÷ n and refillPerSec ÷ n. Leaky meter: burst ÷ n and drainPerSec ÷ n.
 *   Windows: limit ÷ n over the same window. Shares stay fractional: 20 among 3 gateways is 6.67,
 *   which admits 6 requests of cost 1 at once and refills at exactly a third of the rate, so n
 *   gateways never admit more than the limit between them.
 * - Floor: the size never drops below one request's cost (and 1), or a limit with more gateways
 *   than units would reject everything and `local` would silently become `closed`. Where the floor
 *   applies, the gateways together may admit up to n × cost per refill instead of the limit: the
 *   price of staying available, bounded by the number of gateways.
 * - Ceiling: never above the shared limit itself, so a request the shared limit could never hold
 *   (`cost-exceeds-capacity`) is still refused.
 */
export function localShareOf(spec: LimitSpec, expectedGateways: number, cost: number): LimitSpec {
  if (!(Number.isInteger(expectedGateways) && expectedGateways >= 1)) {
    throw new RangeError(`expectedGateways must be a whole number >= 1, got ${expectedGateways}`);
  }
  const size = limitSize(spec);
  const sharedSize = Math.min(size, Math.max(1, cost, size / expectedGateways));
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return { algorithm: spec.algorithm, limit: sharedSize, windowMs: spec.windowMs };
    case "token-bucket":
      return {
        algorithm: "token-bucket",
        capacity: sharedSize,
        refillPerSec: spec.refillPerSec / expectedGateways,
      };
    case "leaky-meter":
      return {
        algorithm: "leaky-meter",
        burst: sharedSize,
        drainPerSec: spec.drainPerSec / expectedGateways,
      };
    default: {
      const unknown: never = spec;
      throw new TypeError(`unknown limit: ${JSON.stringify(unknown)}`);
    }
  }
}

export interface FailurePolicyOptions {
  /**
   * How many gateways share the traffic, which divides each `local` limit. No default: any guess is
   * wrong by a factor, too high rejects customers for our outage, too low multiplies the limit.
   */
  readonly expectedGateways: number;
  /**
   * The wait a `closed` rejection tells the client, at least; while the circuit is open, the
   * remaining cool-down if longer (nothing changes before the next probe).
   * @default 1_000
   */
  readonly closedRetryAfterMs?: number;
  /**
   * Most keys the local quota holds (one per subject and `local` limit), least recently used
   * evicted: an outage must not let a flood of unique addresses grow the process.
   * @default 10_000
   */
  readonly maxLocalKeys?: number;
  /** Durations of the local quota. @default monotonicClock */
  readonly clock?: Clock;
}

/** Decides requests from each limit's `onStoreFailure` while the shared store is unavailable. */
export class FailurePolicy {
  readonly #expectedGateways: number;
  readonly #closedRetryAfterMs: number;
  readonly #localStore: MemoryStore;

  constructor(options: FailurePolicyOptions) {
    const { expectedGateways } = options;
    if (!(Number.isInteger(expectedGateways) && expectedGateways >= 1)) {
      throw new RangeError(`expectedGateways must be a whole number >= 1, got ${expectedGateways}`);
    }
    const closedRetryAfterMs = options.closedRetryAfterMs ?? 1_000;
    if (!(closedRetryAfterMs >= 1 && closedRetryAfterMs <= Number.MAX_SAFE_INTEGER)) {
      throw new RangeError(`closedRetryAfterMs must be a number >= 1, got ${closedRetryAfterMs}`);
    }
    this.#expectedGateways = expectedGateways;
    this.#closedRetryAfterMs = Math.ceil(closedRetryAfterMs);
    this.#localStore = new MemoryStore({
      maxKeys: options.maxLocalKeys ?? 10_000,
      clock: options.clock ?? monotonicClock,
    });
  }

  /** Keys the local quota holds now. */
  get localKeyCount(): number {
    return this.#localStore.keyCount;
  }

  /**
   * The degraded decision for `input` after `failure`. `retryAfterHintMs` is how long the failure
   * is expected to last (an open circuit's remaining cool-down); `closed` rejections tell the
   * longer of it and `closedRetryAfterMs`.
   */
  decide(input: EnforcerInput, failure: StoreFailure, retryAfterHintMs = 0): EnforcerDecision {
    const cost = input.cost ?? 1;
    const retryAfterMs = Math.max(this.#closedRetryAfterMs, Math.ceil(retryAfterHintMs));
    const outcomes: (EnforcerOutcome | undefined)[] = [];
    const localChecks: LimitCheck[] = [];
    const localIndexes: number[] = [];
    let hasClosedRejection = false;

    for (const check of input.checks) {
      if (check.mode !== "enforce" || check.onStoreFailure === "open") {
        outcomes.push(unevaluatedOutcome(check));
      } else if (check.onStoreFailure === "closed") {
        outcomes.push(closedOutcome(check, retryAfterMs));
        hasClosedRejection = true;
      } else {
        localIndexes.push(outcomes.length);
        outcomes.push(undefined);
        localChecks.push({
          scope: check.scope,
          bucket: bucketOf(check),
          limit: localShareOf(check.limit, this.#expectedGateways, cost),
          mode: "enforce",
        });
      }
    }

    if (localChecks.length > 0) {
      const localInput = { subject: input.subject, checks: localChecks, cost };
      // A closed limit already rejects: the local quota is only looked at, never consumed.
      const local = hasClosedRejection
        ? this.#localStore.peekSync(localInput)
        : this.#localStore.decideSync(localInput);
      local.outcomes.forEach((outcome, index) => {
        const at = localIndexes[index];
        if (at !== undefined) outcomes[at] = { ...outcome, fallback: "local" };
      });
    }

    const complete = outcomes.filter((outcome) => outcome !== undefined);
    return enforcerDecisionOf(
      complete,
      { source: "fallback", degraded: true, failure },
      (outcome) => outcome.fallback !== "open",
    );
  }
}

/** Admitted without evaluation: nothing was measured, so `remaining` is simply the size. */
function unevaluatedOutcome(check: EnforcerCheck): EnforcerOutcome {
  const size = limitSize(check.limit);
  return {
    allowed: true,
    limit: size,
    remaining: Math.floor(size),
    retryAfterMs: 0,
    resetAfterMs: 0,
    reason: null,
    scope: check.scope,
    mode: check.mode,
    fallback: "open",
  };
}

/** Rejected because the store could not be asked; the wait is a hint, not a measurement. */
function closedOutcome(check: EnforcerCheck, retryAfterMs: number): EnforcerOutcome {
  return {
    allowed: false,
    limit: limitSize(check.limit),
    remaining: 0,
    retryAfterMs,
    resetAfterMs: retryAfterMs,
    reason: "store-unavailable",
    scope: check.scope,
    mode: check.mode,
    fallback: "closed",
  };
}
