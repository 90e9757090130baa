/**
 * The shared store behind a bounded wait and a circuit breaker, with the failure policy answering
 * whenever the store cannot: every call returns a decision, none waits longer than `maxWaitMs`,
 * and none waits at all while the circuit is open.
 *
 * Slow is not down. A store whose connection is up but whose answer is late (the gateway's own
 * event loop busy, the host's CPU shared with other work, Redis itself slowed by the same
 * machine) is waited for: a busy gateway serves slower, never unlimited. Only evidence that the
 * store is failing decides without it: an error (a lost or refused connection, a reply that
 * means "not now"), a connection that is down when `timeoutMs` passes, or no answer at all within
 * `maxWaitMs`. A timer that fires late because this process was busy is never such evidence: the
 * verdict waits for the I/O already received (`callWithTimeout`).
 *
 * The breaker counts evidence, not decisions: outcomes reported in one event-loop turn count once
 * per kind, so a batch of 64 decisions that failed together (one script call, one lost
 * connection) is one failure, not 64.
 *
 * One breaker per server: a store that knows which server decides a subject
 * (`LimiterStore.nodeOf`, a Redis Cluster's slot owner) gets a breaker per node, so a master that
 * fails (killed, partitioned, mid-failover) opens the circuit for the subjects on its slots only;
 * subjects on the healthy masters keep being decided by Redis. A single Redis (or Sentinel's
 * primary) is one node, `breaker`.
 */
import type { Clock } from "../limiter/clock";
import { monotonicClock } from "../limiter/clock";
import { systemTimers, type Timers } from "../limiter/timers";
import type { LeaseReturn, LeaseWanted, LimiterStore } from "../limiter/types";
import { type BreakerPermit, CircuitBreaker } from "./circuit-breaker";
import type { FailurePolicy } from "./failure-policy";
import { callWithTimeout } from "./timers";
import { type EnforcerDecision, type EnforcerInput, fromStoreDecision } from "./types";

export interface GuardedStoreOptions {
  /** The shared store (the Redis store in production). */
  readonly store: LimiterStore;
  /** Answers when the store does not. */
  readonly failurePolicy: FailurePolicy;
  /**
   * How long a store call may go unanswered before the store is looked at: if it is not
   * reachable then (`isStoreReachable`), the failure policy answers at once; if it is, the call
   * is merely slow and is waited for, up to `maxWaitMs`. A healthy local Redis answers in about a
   * millisecond at p99.
   * @default 50
   */
  readonly timeoutMs?: number;
  /**
   * The longest one decision waits for a reachable but slow store, in all; past it the failure
   * policy answers (as a `timeout`) and the breaker counts a failure. Bounded so that a Redis
   * that hangs with its connections open (frozen, partitioned) costs each request at most this
   * until the breaker opens.
   * @default 1_000
   */
  readonly maxWaitMs?: number;
  /**
   * Whether the store can be asked now: for Redis, whether the connection is up. Asked when a
   * call has been unanswered for `timeoutMs`.
   * @default () => true
   */
  readonly isStoreReachable?: () => boolean;
  /** The breaker of a store that is one server (no `nodeOf`, or it answers ""). @default a CircuitBreaker with its defaults, on `clock` */
  readonly breaker?: CircuitBreaker;
  /**
   * Makes the breaker of each further server a store names (`LimiterStore.nodeOf`, a Redis
   * Cluster's masters), with the same settings as `breaker`.
   * @default a CircuitBreaker with its defaults, on `clock`
   */
  readonly newBreaker?: () => CircuitBreaker;
  /** Runs the timeout. @default systemTimers */
  readonly timers?: Timers;
  /** @default monotonicClock */
  readonly clock?: Clock;
  /**
   * Told about every failed call's error (not timeouts, not an open circuit), so the runtime can
   * log the cause once. The decision is already made when it is called.
   */
  readonly onStoreError?: (error: unknown) => void;
}

/** A guarded decision and the lease that came with it (0 units: none). */
export interface GuardedLease {
  readonly decision: EnforcerDecision;
  readonly units: number;
  readonly lifeMs: number;
  /** The store's time of the grant (`LeasedDecision.grantedAtMs`); 0 without a lease. */
  readonly grantedAtMs: number;
}

/** A server's breaker and the evidence told to it (see `#reportFailure` and `#reportSuccess`). */
interface NodeGuard {
  readonly breaker: CircuitBreaker;
  /** A success was reported to the breaker in this event-loop turn. */
  hasTurnSuccess: boolean;
  /** Failures told to the breaker so far: a call remembers the count when it starts. */
  failuresTold: number;
}

/** Most per-node breakers kept: far more masters than any Cluster has; past it, the oldest go. */
const MAX_NODE_BREAKERS = 1_000;

/** Longest `maxWaitMs` accepted: a minute (a request waiting longer has been given up on). */
const MAX_WAIT_LIMIT_MS = 60_000;

export class GuardedStore {
  readonly #store: LimiterStore;
  readonly #failurePolicy: FailurePolicy;
  readonly #timeoutMs: number;
  readonly #maxWaitMs: number;
  readonly #isStoreReachable: () => boolean;
  readonly #breaker: CircuitBreaker;
  readonly #newBreaker: () => CircuitBreaker;
  /** The one-server guard ("") and one per node the store named. */
  readonly #guards = new Map<string, NodeGuard>();
  readonly #timers: Timers;
  readonly #clock: Clock;
  readonly #onStoreError: ((error: unknown) => void) | undefined;
  #slowDecisionCount = 0;

  constructor(options: GuardedStoreOptions) {
    this.#store = options.store;
    this.#failurePolicy = options.failurePolicy;
    this.#timeoutMs = options.timeoutMs ?? 50;
    if (!(this.#timeoutMs > 0 && this.#timeoutMs <= MAX_WAIT_LIMIT_MS)) {
      throw new RangeError(
        `timeoutMs must be a number of milliseconds > 0 and at most ${MAX_WAIT_LIMIT_MS}, got ${this.#timeoutMs}`,
      );
    }
    this.#maxWaitMs = options.maxWaitMs ?? Math.max(1_000, this.#timeoutMs);
    if (!(this.#maxWaitMs >= this.#timeoutMs && this.#maxWaitMs <= MAX_WAIT_LIMIT_MS)) {
      throw new RangeError(
        `maxWaitMs must be a number of milliseconds from timeoutMs (${this.#timeoutMs}) to ${MAX_WAIT_LIMIT_MS}, got ${this.#maxWaitMs}`,
      );
    }
    this.#isStoreReachable = options.isStoreReachable ?? (() => true);
    this.#clock = options.clock ?? monotonicClock;
    this.#breaker = options.breaker ?? new CircuitBreaker({ clock: this.#clock });
    const clock = this.#clock;
    this.#newBreaker = options.newBreaker ?? (() => new CircuitBreaker({ clock }));
    this.#guards.set("", { breaker: this.#breaker, hasTurnSuccess: false, failuresTold: 0 });
    this.#timers = options.timers ?? systemTimers;
    this.#onStoreError = options.onStoreError;
  }

  /** The breaker of a one-server store (see {@link nodeBreakers} for a Cluster's). */
  get breaker(): CircuitBreaker {
    return this.#breaker;
  }

  /** Every breaker by server: "" for a one-server store, `host:port` per Cluster master seen. */
  nodeBreakers(): ReadonlyMap<string, CircuitBreaker> {
    const breakers = new Map<string, CircuitBreaker>();
    for (const [node, guard] of this.#guards) breakers.set(node, guard.breaker);
    return breakers;
  }

  /** The guard of the server that decides `subject` now. */
  #guardOf(subject: string): NodeGuard {
    const node = this.#store.nodeOf?.(subject) ?? "";
    const known = this.#guards.get(node);
    if (known !== undefined) return known;
    if (this.#guards.size >= MAX_NODE_BREAKERS) {
      for (const old of this.#guards.keys()) {
        if (old !== "") {
          this.#guards.delete(old);
          break;
        }
      }
    }
    const guard: NodeGuard = {
      breaker: this.#newBreaker(),
      hasTurnSuccess: false,
      failuresTold: 0,
    };
    this.#guards.set(node, guard);
    return guard;
  }

  /**
   * Store decisions that arrived after `timeoutMs` (the store was slow and was waited for, rather
   * than decided without): how often the gateway served slower instead of degraded.
   */
  get slowDecisionCount(): number {
    return this.#slowDecisionCount;
  }

  /**
   * The store's decision, or the failure policy's when the circuit is open (at once, without
   * calling the store), the call fails, the store is unreachable once `timeoutMs` has passed, or
   * it does not answer within `maxWaitMs`. Rejects only on a programmer mistake the failure
   * policy refuses too (two checks sharing a bucket).
   */
  async decide(input: EnforcerInput): Promise<EnforcerDecision> {
    const answer = await this.#call(input, () => this.#store.decide(input));
    return answer.kind === "store" ? fromStoreDecision(answer.value) : answer.decision;
  }

  /**
   * {@link decide}, asking the store for a lease with the decision (`LimiterStore.decideLeasing`)
   * when `lease.units` > 0 and the store can lease. No lease (0 units) whenever the failure
   * policy answered.
   */
  async decideLeasing(input: EnforcerInput, lease: LeaseWanted): Promise<GuardedLease> {
    const store = this.#store;
    if (lease.units === 0 || store.decideLeasing === undefined) {
      return { decision: await this.decide(input), units: 0, lifeMs: 0, grantedAtMs: 0 };
    }
    const answer = await this.#call(input, () =>
      (store.decideLeasing as NonNullable<LimiterStore["decideLeasing"]>)(input, lease),
    );
    if (answer.kind === "policy") {
      return { decision: answer.decision, units: 0, lifeMs: 0, grantedAtMs: 0 };
    }
    const leased = answer.value;
    return {
      decision: fromStoreDecision(leased.decision),
      units: leased.units,
      lifeMs: leased.lifeMs,
      grantedAtMs: leased.grantedAtMs,
    };
  }

  /**
   * Gives a lease's unspent units back (`LimiterStore.returnLease`), resolving to the units the
   * store took back: 0 when it could not be asked (no such call, the circuit open) or did not
   * answer. Nobody waits on a return, so it neither waits for a slow store nor counts towards
   * the circuit breaker; a lost return leaves the units charged, which only ever admits less.
   */
  async returnLease(input: EnforcerInput, lease: LeaseReturn): Promise<number> {
    const store = this.#store;
    if (store.returnLease === undefined || lease.units === 0) return 0;
    if (this.#guardOf(input.subject).breaker.state !== "closed") return 0;
    try {
      return await store.returnLease(input, lease);
    } catch {
      return 0;
    }
  }

  /** The store's answer, or the failure policy's decision when the store gave none. */
  async #call<T>(
    input: EnforcerInput,
    call: () => Promise<T>,
  ): Promise<
    | { readonly kind: "store"; readonly value: T }
    | { readonly kind: "policy"; readonly decision: EnforcerDecision }
  > {
    const guard = this.#guardOf(input.subject);
    const breaker = guard.breaker;
    const permit = breaker.tryAcquire();
    const failuresBefore = guard.failuresTold;
    if (permit === null) {
      return {
        kind: "policy",
        decision: this.#failurePolicy.decide(input, "circuit-open", breaker.coolDownRemainingMs()),
      };
    }
    const result = await callWithTimeout(call, {
      timeoutMs: this.#timeoutMs,
      maxWaitMs: this.#maxWaitMs,
      isWorthWaiting: this.#isStoreReachable,
      timers: this.#timers,
      clock: this.#clock,
    });
    switch (result.kind) {
      case "ok":
        if (result.elapsedMs > this.#timeoutMs) this.#slowDecisionCount++;
        this.#reportSuccess(guard, permit);
        return { kind: "store", value: result.value };
      case "timeout":
        this.#reportFailure(guard, permit, failuresBefore);
        return {
          kind: "policy",
          decision: this.#failurePolicy.decide(input, "timeout", breaker.coolDownRemainingMs()),
        };
      case "error": {
        this.#reportFailure(guard, permit, failuresBefore);
        const decision = this.#failurePolicy.decide(
          input,
          "store-error",
          breaker.coolDownRemainingMs(),
        );
        try {
          this.#onStoreError?.(result.error);
        } catch {
          // A logger that throws must not fail a request whose decision is already made.
        }
        return { kind: "policy", decision };
      }
      default: {
        const unknown: never = result;
        throw new TypeError(`unknown call result: ${JSON.stringify(unknown)}`);
      }
    }
  }

  /**
   * Tells the breaker of a failure, unless one was told while this call was in flight: calls in
   * flight together that fail together (a batch's decisions, or every call on a connection that
   * dropped) are one piece of evidence, however they settle, while a call started after the last
   * failure was told is a new one (a caller retrying one call after another). A probe always
   * counts (it alone can reopen a half-open circuit). `failuresBefore`: the guard's `failuresTold` when the
   * call started.
   */
  #reportFailure(guard: NodeGuard, permit: BreakerPermit, failuresBefore: number): void {
    if (!permit.isProbe && guard.failuresTold !== failuresBefore) return;
    guard.failuresTold++;
    guard.breaker.recordFailure(permit);
  }

  /**
   * Tells the breaker of a success, once per event-loop turn: the decisions a batch carried
   * settle in the same turn. A probe always counts (it alone can close a half-open circuit).
   * Without `timers.defer` every success counts.
   */
  #reportSuccess(guard: NodeGuard, permit: BreakerPermit): void {
    const defer = this.#timers.defer;
    if (defer !== undefined && !permit.isProbe) {
      if (guard.hasTurnSuccess) return;
      guard.hasTurnSuccess = true;
      defer(() => {
        guard.hasTurnSuccess = false;
      });
    }
    guard.breaker.recordSuccess(permit);
  }
}
