/**
 * The vocabulary every limiter module shares: what a limit is, what a decision says, and the
 * contract every store (in-process, Redis) implements. Pure types; no runtime code here.
 *
 * Units are always in the name (`windowMs`, `refillPerSec`, `retryAfterMs`). Times passed to the
 * algorithms are milliseconds on a clock chosen by the caller: the in-process store uses a
 * monotonic clock, the Redis store uses Redis's `TIME`.
 */

/**
 * Fixed window: at most `limit` units of cost per window cut from the clock
 * (`windowStartMs = nowMs - nowMs % windowMs`).
 */
export interface FixedWindowLimit {
  readonly algorithm: "fixed-window";
  /** Units of cost admitted per window. */
  readonly limit: number;
  readonly windowMs: number;
}

/** Sliding window log: at most `limit` units of cost in every rolling `windowMs`, exactly. */
export interface SlidingLogLimit {
  readonly algorithm: "sliding-log";
  readonly limit: number;
  readonly windowMs: number;
}

/**
 * Sliding window counter: `curr + prev * (1 - elapsedFraction)` estimates the rolling count from
 * two fixed-window counters.
 */
export interface SlidingWindowLimit {
  readonly algorithm: "sliding-window";
  readonly limit: number;
  readonly windowMs: number;
}

/** Token bucket: bursts up to `capacity`, sustained `refillPerSec`. A new key starts full. */
export interface TokenBucketLimit {
  readonly algorithm: "token-bucket";
  /** Largest burst, in units of cost. */
  readonly capacity: number;
  /** Sustained rate, in units of cost per second. May be fractional. */
  readonly refillPerSec: number;
}

/**
 * Leaky bucket as a meter (GCRA): rejects when the bucket would overflow. Admits the same traffic
 * as a token bucket with the same numbers, with one number of state per key instead of two.
 */
export interface LeakyMeterLimit {
  readonly algorithm: "leaky-meter";
  /** Bucket size: how much cost may be admitted back to back. */
  readonly burst: number;
  /** Drain rate, in units of cost per second. */
  readonly drainPerSec: number;
}

/** Every limit that can take part in a layered decision. Discriminated on `algorithm`. */
export type LimitSpec =
  | FixedWindowLimit
  | SlidingLogLimit
  | SlidingWindowLimit
  | TokenBucketLimit
  | LeakyMeterLimit;

export type Algorithm = LimitSpec["algorithm"];

/**
 * Leaky bucket as a shaper (a queue): admits with a delay the caller must wait before doing the
 * work, so output leaves at `drainPerSec`; rejects only when the queue is full. Used on its own,
 * never inside a layered decision.
 */
export interface LeakyShaperLimit {
  readonly algorithm: "leaky-shaper";
  readonly drainPerSec: number;
  /** Most units of cost that may be waiting at once. */
  readonly maxQueue: number;
}

/** Why an algorithm said no. A closed set: callers switch on it. */
export type RejectReason =
  /** The key has used its budget; `retryAfterMs` says when enough is back. */
  | "limit-exceeded"
  /** The request costs more than the limit can ever hold; retrying will never help. */
  | "cost-exceeds-capacity"
  /** Shaper only: the queue is full. */
  | "queue-full";

/**
 * The answer for one limit. Never a bare boolean.
 *
 * Invariants: `retryAfterMs === 0` when allowed; `retryAfterMs >= 0` and `resetAfterMs >= 0`
 * always; `0 <= remaining <= limit`; `reason === null` exactly when allowed.
 */
export interface Decision {
  readonly allowed: boolean;
  /** The limit's size: `limit`, `capacity` or `burst`. */
  readonly limit: number;
  /** Whole units of cost still available after this request (rounded down). */
  readonly remaining: number;
  /**
   * How long until the same request would be admitted if nothing else competed; 0 when allowed.
   * `Infinity` never appears: a request that can never fit is `cost-exceeds-capacity` with
   * `retryAfterMs` 0.
   */
  readonly retryAfterMs: number;
  /** How long until the limit is entirely unused again (full bucket, empty window). */
  readonly resetAfterMs: number;
  readonly reason: RejectReason | null;
}

/** What one algorithm module returns: the decision and the state to store for the key. */
export interface Step<S> {
  readonly decision: Decision;
  readonly state: S;
}

/** How a limit takes part in a layered decision. `off` limits are never passed to a store. */
export type LimitMode = "enforce" | "dry-run";

/** One limit of a layered decision, named by its scope (see the policy module's scope grammar). */
export interface LimitCheck {
  /** Stable, readable scope id, e.g. `tier:pro/endpoint:reports`: what reports name. */
  readonly scope: string;
  /**
   * Which stored state this check reads and writes, under the decision's subject. The policy sets
   * it to the layer (`account`, `endpoint:reports`, `ceiling`) so that an override replacing a
   * tier's limit keeps the same bucket: an edit neither resets nor refills it.
   * @default scope
   */
  readonly bucket?: string;
  readonly limit: LimitSpec;
  readonly mode: LimitMode;
  /**
   * `replicated`: a store with replicas confirms the decision's writes reached at least one
   * replica before it answers (the Redis store: `WAIT` after the call, on a connection of its
   * own), so a failover cannot lose an admission this limit made; when no replica acknowledges in
   * time the call fails and the failure policy decides. Costs a replica round trip per decision.
   * Absent (the default): written to the primary only; docs/failover.md bounds what a failover
   * can then lose.
   */
  readonly durability?: Durability;
}

/** How sure a limit's writes are to survive a failover; see `LimitCheck.durability`. */
export type Durability = "async" | "replicated";

/** The outcome of one limit within a layered decision. */
export interface LimitOutcome extends Decision {
  readonly scope: string;
  readonly mode: LimitMode;
}

/**
 * A layered decision: admitted only if every enforced limit admits; a rejection consumes from none.
 * The top-level fields describe the binding limit: on admission the enforced limit with the least
 * remaining (what the response headers show); on rejection the rejecting limit with the largest
 * `retryAfterMs`, except that a `cost-exceeds-capacity` rejection binds first (retrying can never
 * help, so its `retryAfterMs` of 0 must not be hidden behind a finite wait). Ties go to the check
 * listed first. Dry-run limits are reported in `outcomes` and never affect the top level. With no
 * enforced limit the request is admitted with `scope: null` and `limit`/`remaining` set to
 * `UNLIMITED` (`Number.MAX_SAFE_INTEGER`, which survives JSON where Infinity would not).
 */
export interface LayeredDecision extends Decision {
  /** Scope of the binding limit; null only when no enforced limit applied. */
  readonly scope: string | null;
  readonly outcomes: readonly LimitOutcome[];
}

/** One request to a store: the subject whose keys are touched, and the limits that apply. */
export interface DecideInput {
  /**
   * Who is limited: a customer id, a client address, or an address plus route. Every key of one
   * decision is derived from this subject and each check's scope, never from limit parameters.
   */
  readonly subject: string;
  readonly checks: readonly LimitCheck[];
  /** Units of cost this request spends on every enforced limit. @default 1 */
  readonly cost?: number;
}

/**
 * The contract every store implements. A store is an adapter: the decision logic lives in the pure
 * algorithm modules and the layered combiner, and the store's job is atomic state keeping.
 */
export interface LimiterStore {
  /** Evaluate and, when admitted, consume: one atomic step for all checks. */
  decide(input: DecideInput): Promise<LayeredDecision>;
  /** The decision a request of `cost` would get now, consuming and writing nothing. */
  peek(input: DecideInput): Promise<LayeredDecision>;
  /**
   * Optional: `decide`, and on admission a lease of up to `lease.units` more units on every
   * check, for the caller alone to spend until `lifeMs` has passed (the Redis store has it; see
   * `RedisStore.decideLeasing`). A store without it is never asked for leases.
   */
  decideLeasing?(input: DecideInput, lease: LeaseWanted): Promise<LeasedDecision>;
  /**
   * Optional, with `decideLeasing`: gives back units of a lease the caller will not spend (it
   * has stopped spending them), so the limit admits them elsewhere. Exactly what the lease
   * charged is undone, never after the window the units came from, and never into room another
   * lease holds; call it once per grant (a lost reply is not retried: the units stay charged,
   * never credited twice). Resolves to the units given back on the check that took back least.
   */
  returnLease?(input: DecideInput, lease: LeaseReturn): Promise<number>;
  /**
   * Optional: sends at once every call held back (`LeaseWanted.maxDelayMs`), so that a caller
   * about to close the store's connection gets their answers first.
   */
  sendHeld?(): void;
  /**
   * Optional: which server decides `subject` now (a Redis Cluster's slot owner, `host:port`), ""
   * when one server decides every subject or the owner is not known yet. The enforcer keeps a
   * circuit breaker per server, so one failing server does not degrade subjects on the others.
   */
  nodeOf?(subject: string): string;
}

/** What a caller asks to lease with a decision (see `LimiterStore.decideLeasing`). */
export interface LeaseWanted {
  /** Most units of cost to reserve beyond the request's own: a whole number, 0 to 1e9. */
  readonly units: number;
  /** Longest lifetime of the lease in ms: a whole number, 0 to 3 600 000. */
  readonly lifeMs: number;
  /**
   * How long the store may hold the call back, in ms, to send it together with other decisions:
   * for a call nobody waits on (a lease refilled before it runs out), so that many travel in one
   * round trip. The Redis store sends it with the next batch for the same hash slot, or once
   * this long has passed, whichever comes first. A number from 0 to 60 000.
   * @default 0 (sent like any decision)
   */
  readonly maxDelayMs?: number;
}

/** Unspent units of a lease, given back (see `LimiterStore.returnLease`). */
export interface LeaseReturn {
  /** Units of cost to give back on every check: at most what the grant gave, never spent. */
  readonly units: number;
  /** The store's time of the grant, as its decision reported it (`LeasedDecision.grantedAtMs`). */
  readonly grantedAtMs: number;
  /** The grant's lifetime as the store gave it (`LeasedDecision.lifeMs`). */
  readonly lifeMs: number;
  /** As `LeaseWanted.maxDelayMs`: nobody waits on a return. @default 0 */
  readonly maxDelayMs?: number;
}

/** A decision and the lease that came with it (0 units: none). */
export interface LeasedDecision {
  readonly decision: LayeredDecision;
  /** Units of cost reserved for the caller on every check, beyond the request's own. */
  readonly units: number;
  /**
   * The store's time of the call, in ms (Redis `TIME`, or the store's injected clock): what a
   * return of these units names them by (`LeaseReturn.grantedAtMs`).
   */
  readonly grantedAtMs: number;
  /**
   * How long the units may be spent, in ms from before the call was made (0: no lease): the
   * caller's reading, earlier than Redis's, so the lease ends for the caller no later than Redis
   * allowed, even for a call the store held back (`LeaseWanted.maxDelayMs`).
   */
  readonly lifeMs: number;
}
